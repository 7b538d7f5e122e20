// redis::Subscriber: the wanted set, subscribing it on every connection, and
// the messages (heartwheel/redis/subscriber.h).
//
// Confirmations: Redis answers each name of a (P)SUBSCRIBE with
// ["subscribe", name, count] in order. A wanted name is `confirmed` from its
// confirmation until the connection closes; `unconfirmed_` counts the wanted
// names still waiting, so the end of a re-subscribe round is one comparison.
// An UNSUBSCRIBE's confirmation needs nothing: the name already left the
// wanted set when unsubscribe() was called, and if it was wanted again
// since, its new SUBSCRIBE's confirmation comes after it.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/redis/error.h>
#include <heartwheel/redis/subscriber.h>

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "link.h"

namespace heartwheel::redis {

namespace detail {

namespace {
// Names per SUBSCRIBE when re-subscribing: bounded commands, few of them.
constexpr std::size_t kNamesPerCommand = 1000;
constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";

const SubscriberOptions& validated(const SubscriberOptions& o) {
  o.validate();
  return o;
}

// Transparent lookups by string_view.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};
}  // namespace

class SubscriberCore final : public Link {
 public:
  SubscriberCore(LoopWheel& wheel, SubscriberOptions options)
      : Link(wheel, validated(options)), options_(std::move(options)) {}

  void start() { start_link(); }
  void stop() { stop_link(); }
  void want(std::string_view name, bool pattern);
  void unwant(std::string_view name, bool pattern);
  bool wants(std::string_view name, bool pattern) const noexcept {
    return set(pattern).find(name) != set(pattern).end();
  }
  bool active(std::string_view name, bool pattern) const noexcept {
    const auto it = set(pattern).find(name);
    return it != set(pattern).end() && it->second && connection();
  }
  std::size_t wanted() const noexcept { return channels_.size() + patterns_.size(); }
  LinkStats stats() const noexcept {
    LinkStats s = link_stats();
    s.subscriptions = wanted();
    s.active_subscriptions = connection() ? wanted() - unconfirmed_ : 0;
    return s;
  }
  const SubscriberOptions& options() const noexcept { return options_; }

 private:
  // name -> confirmed on this connection
  using Set = std::unordered_map<std::string, bool, NameHash, std::equal_to<>>;
  const Set& set(bool pattern) const noexcept { return pattern ? patterns_ : channels_; }
  Set& set(bool pattern) noexcept { return pattern ? patterns_ : channels_; }

  void link_opened(net::Connection& conn) override;
  void link_reply(net::Connection& conn, Reply&& reply) override;
  void link_closed(net::CloseReason, std::error_code) override;
  void send_ping(net::Connection&) override { send(kPing); }
  void send_names(std::string_view verb, const std::vector<std::string_view>& names);
  void confirmed(Set::iterator it, bool pattern);
  void finish_round_if_done();
  void message(std::string_view channel, std::string_view payload, std::string_view pattern);

  SubscriberOptions options_;
  Set channels_;
  Set patterns_;
  std::size_t unconfirmed_ = 0;  // wanted names Redis has not confirmed on this connection
  bool resubscribing_ = false;   // a reconnect's round is under way
};

void SubscriberCore::want(std::string_view name, bool pattern) {
  auto [it, added] = set(pattern).try_emplace(std::string(name), false);
  if (!added) return;
  ++unconfirmed_;
  ++stats_.subscribes;
  if (connection()) send(Command{pattern ? "PSUBSCRIBE" : "SUBSCRIBE", name}.bytes());
}

void SubscriberCore::unwant(std::string_view name, bool pattern) {
  const auto it = set(pattern).find(name);
  if (it == set(pattern).end()) return;
  if (!it->second) --unconfirmed_;
  set(pattern).erase(it);
  ++stats_.unsubscribes;
  if (connection()) send(Command{pattern ? "PUNSUBSCRIBE" : "UNSUBSCRIBE", name}.bytes());
  // The last name a round was waiting for is no longer wanted: it is complete.
  finish_round_if_done();
}

void SubscriberCore::send_names(std::string_view verb, const std::vector<std::string_view>& names) {
  std::vector<std::string_view> args;
  for (std::size_t i = 0; i < names.size(); i += kNamesPerCommand) {
    args.assign({verb});
    const std::size_t end = std::min(names.size(), i + kNamesPerCommand);
    args.insert(args.end(), names.begin() + static_cast<std::ptrdiff_t>(i),
                names.begin() + static_cast<std::ptrdiff_t>(end));
    send(Command(std::span<const std::string_view>(args)).bytes());
  }
}

void SubscriberCore::link_closed(net::CloseReason, std::error_code) {
  // Nothing is confirmed without a connection.
  resubscribing_ = false;
  for (bool pattern : {false, true})
    for (auto& entry : set(pattern)) entry.second = false;
  unconfirmed_ = wanted();
}

void SubscriberCore::link_opened(net::Connection&) {
  // A reconnect when this link had a connection before.
  resubscribing_ = stats_.connects > 1;
  for (bool pattern : {false, true}) {
    std::vector<std::string_view> names;
    names.reserve(set(pattern).size());
    for (const auto& entry : set(pattern)) names.push_back(entry.first);
    if (resubscribing_) stats_.resubscribes += names.size();
    send_names(pattern ? "PSUBSCRIBE" : "SUBSCRIBE", names);
  }
  finish_round_if_done();  // nothing was wanted
}

void SubscriberCore::confirmed(Set::iterator it, bool pattern) {
  if (it->second) return;  // a duplicate confirmation
  it->second = true;
  --unconfirmed_;
  if (options_.on_subscribed) {
    // A copy: the callback may unsubscribe the name, which frees the key.
    const std::string name = it->first;
    const bool again = resubscribing_;
    guard([&] { options_.on_subscribed(name, pattern, again); });
  }
  finish_round_if_done();
}

void SubscriberCore::finish_round_if_done() {
  if (!resubscribing_ || unconfirmed_ > 0) return;
  resubscribing_ = false;
  ++stats_.resubscribe_rounds;
  if (options_.on_resubscribed) guard([&] { options_.on_resubscribed(wanted()); });
}

void SubscriberCore::message(std::string_view channel, std::string_view payload,
                             std::string_view pattern) {
  const bool wanted_now = pattern.empty() ? wants(channel, false) : wants(pattern, true);
  if (!wanted_now) {
    ++stats_.stray_messages;
    return;
  }
  ++stats_.messages;
  guard([&] { options_.on_message(Message{channel, payload, pattern}); });
}

void SubscriberCore::link_reply(net::Connection& conn, Reply&& r) {
  // PING's answer: "+PONG" outside the subscribed mode, ["pong", ""] in it.
  if (r.is_status()) return;
  if (r.is_error()) {
    report_error(errc::server_error, r.str());
    return;
  }
  if (!r.is_array() || r.size() < 2 || !r[0].is_string()) {
    ++stats_.protocol_errors;
    report_error(heartwheel::errc::protocol_error, "not a pub/sub reply");
    conn.close(net::CloseReason::protocol_error, heartwheel::errc::protocol_error);
    return;
  }
  const Reply& kind = r[0];
  const std::size_t n = r.size();
  if (kind.is("message") && n == 3) {
    message(r[1].str(), r[2].str(), {});
  } else if (kind.is("pmessage") && n == 4) {
    message(r[2].str(), r[3].str(), r[1].str());
  } else if ((kind.is("subscribe") || kind.is("psubscribe")) && n == 3) {
    const bool pattern = kind.is("psubscribe");
    const auto it = set(pattern).find(r[1].str());
    if (it != set(pattern).end()) confirmed(it, pattern);  // else: no longer wanted
  }
  // unsubscribe / punsubscribe confirmations and ["pong", x]: nothing to do.
}

}  // namespace detail

void SubscriberOptions::validate() const {
  LinkOptions::validate();
  if (!on_message) throw std::invalid_argument("redis: SubscriberOptions::on_message is required");
}

Subscriber::Subscriber(LoopWheel& wheel, SubscriberOptions options)
    : core_(std::make_unique<detail::SubscriberCore>(wheel, std::move(options))) {}
Subscriber::~Subscriber() = default;
void Subscriber::start() { core_->start(); }
void Subscriber::stop() { core_->stop(); }
bool Subscriber::started() const noexcept { return core_->link_started(); }
void Subscriber::subscribe(std::string_view channel) { core_->want(channel, false); }
void Subscriber::unsubscribe(std::string_view channel) { core_->unwant(channel, false); }
void Subscriber::psubscribe(std::string_view pattern) { core_->want(pattern, true); }
void Subscriber::punsubscribe(std::string_view pattern) { core_->unwant(pattern, true); }
bool Subscriber::wants(std::string_view channel) const noexcept {
  return core_->wants(channel, false);
}
bool Subscriber::wants_pattern(std::string_view pattern) const noexcept {
  return core_->wants(pattern, true);
}
bool Subscriber::active(std::string_view channel) const noexcept {
  return core_->active(channel, false);
}
bool Subscriber::active_pattern(std::string_view pattern) const noexcept {
  return core_->active(pattern, true);
}
std::size_t Subscriber::subscriptions() const noexcept { return core_->wanted(); }
bool Subscriber::connected() const noexcept { return core_->connection() != nullptr; }
void Subscriber::flush() { core_->flush(); }
LinkStats Subscriber::stats() const noexcept { return core_->stats(); }
const SubscriberOptions& Subscriber::options() const noexcept { return core_->options(); }

}  // namespace heartwheel::redis
