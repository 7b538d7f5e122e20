// redis::Subscriber: the wanted set, subscribing it on every connection, and
// the messages (heartwheel/redis/subscriber.h); SubscriberCore in both its
// modes (subscriber_core.h says how the wanted set is kept).
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/redis/error.h>
#include <heartwheel/redis/slot.h>
#include <heartwheel/redis/subscriber.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "client_impl.h"
#include "subscriber_core.h"

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
}  // namespace

SubscriberCore::SubscriberCore(LoopWheel& wheel, SubscriberOptions options, bool sharded,
                               Hooks hooks)
    : Link(wheel, validated(options)),
      options_(std::move(options)),
      sharded_(sharded),
      hooks_(std::move(hooks)),
      pacer_(wheel, [this] { send_step(); }) {}

SubscriberCore::~SubscriberCore() = default;

void SubscriberCore::send_ping(net::Connection&) { send(kPing); }

void SubscriberCore::want(std::string_view name, bool pattern) {
  auto [it, added] = set(pattern).try_emplace(std::string(name), State::unsent);
  if (!added) return;
  ++unconfirmed_;
  ++stats_.subscribes;
  if (!connection()) return;
  if (sharded_) {
    // With the others of this loop turn, in the next step.
    pending_.emplace_back(name);
    pacer_.no_later_than(wheel().now());
    return;
  }
  it->second = State::sent;
  send(Command{pattern ? "PSUBSCRIBE" : "SUBSCRIBE", name}.bytes());
}

void SubscriberCore::unwant(std::string_view name, bool pattern) {
  const auto it = set(pattern).find(name);
  if (it == set(pattern).end()) return;
  const State state = it->second;
  if (state != State::confirmed) --unconfirmed_;
  set(pattern).erase(it);
  ++stats_.unsubscribes;
  if (connection() && !(sharded_ && state == State::unsent))
    send(Command{sharded_ ? "SUNSUBSCRIBE" : pattern ? "PUNSUBSCRIBE" : "UNSUBSCRIBE", name}
             .bytes());
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

// Sharded: up to subscribe_batch names from the queue, one SSUBSCRIBE per
// slot among them; the rest after subscribe_interval.
void SubscriberCore::send_step() {
  if (!connection()) return;
  std::map<std::uint16_t, std::vector<std::string_view>> by_slot;
  std::vector<std::string> taken;
  taken.reserve(std::min(pending_.size(), options_.subscribe_batch));
  while (!pending_.empty() && taken.size() < options_.subscribe_batch) {
    std::string name = std::move(pending_.front());
    pending_.pop_front();
    const auto it = channels_.find(name);
    if (it == channels_.end() || it->second != State::unsent) continue;  // gone, or sent
    it->second = State::sent;
    taken.push_back(std::move(name));
  }
  for (const std::string& name : taken) by_slot[key_slot(name)].push_back(name);
  for (const auto& [slot, names] : by_slot) send_names("SSUBSCRIBE", names);
  if (!pending_.empty()) pacer_.at(wheel().now() + options_.subscribe_interval);
}

void SubscriberCore::link_closed(net::CloseReason, std::error_code) {
  // Nothing is confirmed without a connection.
  resubscribing_ = false;
  for (bool pattern : {false, true})
    for (auto& entry : set(pattern)) entry.second = State::unsent;
  unconfirmed_ = wanted();
  pending_.clear();
  pacer_.cancel();
}

void SubscriberCore::link_opened(net::Connection&) {
  // A reconnect when this link had a connection before.
  resubscribing_ = stats_.connects > 1;
  if (resubscribing_) stats_.resubscribes += wanted();
  if (sharded_) {
    for (const auto& entry : channels_) pending_.push_back(entry.first);
    send_step();
  } else {
    for (bool pattern : {false, true}) {
      std::vector<std::string_view> names;
      names.reserve(set(pattern).size());
      for (auto& entry : set(pattern)) {
        entry.second = State::sent;
        names.push_back(entry.first);
      }
      send_names(pattern ? "PSUBSCRIBE" : "SUBSCRIBE", names);
    }
  }
  finish_round_if_done();  // nothing was wanted
}

void SubscriberCore::confirmed(Set::iterator it, bool pattern) {
  if (it->second == State::confirmed) return;  // a duplicate confirmation
  it->second = State::confirmed;
  --unconfirmed_;
  if (options_.on_subscribed) {
    // A copy: the callback may unsubscribe the name, which frees the key.
    const std::string name = it->first;
    const bool again = resubscribing_;
    guard([&] { options_.on_subscribed(name, pattern, again); });
  }
  finish_round_if_done();
}

// Redis dropped a channel we still want (sharded: its slot moved). Asked
// again here; if the slot is elsewhere, Redis answers -MOVED.
void SubscriberCore::dropped(std::string_view name) {
  const auto it = channels_.find(name);
  if (it == channels_.end() || it->second != State::confirmed) return;  // our own SUNSUBSCRIBE
  it->second = State::unsent;
  ++unconfirmed_;
  pending_.push_back(it->first);
  pacer_.no_later_than(wheel().now());
  if (hooks_.dropped) hooks_.dropped(name);
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
    // Sharded: -MOVED for an SSUBSCRIBE of a slot this master no longer
    // serves; the cluster link follows it from on_error.
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
  if ((kind.is("message") || kind.is("smessage")) && n == 3) {
    message(r[1].str(), r[2].str(), {});
  } else if (kind.is("pmessage") && n == 4) {
    message(r[2].str(), r[3].str(), r[1].str());
  } else if ((kind.is("subscribe") || kind.is("psubscribe") || kind.is("ssubscribe")) && n == 3) {
    const bool pattern = kind.is("psubscribe");
    const auto it = set(pattern).find(r[1].str());
    if (it != set(pattern).end()) confirmed(it, pattern);  // else: no longer wanted
  } else if (kind.is("sunsubscribe") && n == 3) {
    dropped(r[1].str());
  }
  // unsubscribe / punsubscribe confirmations and ["pong", x]: nothing to do.
}

LinkStats SubscriberCore::stats() const noexcept {
  LinkStats s = link_stats();
  s.subscriptions = wanted();
  s.active_subscriptions = connection() ? wanted() - unconfirmed_ : 0;
  return s;
}

std::unique_ptr<SubscriberImpl> make_subscriber(LoopWheel& wheel, SubscriberOptions options) {
  if (options.cluster.enabled()) return make_cluster_subscriber(wheel, std::move(options));
  return std::make_unique<SubscriberCore>(wheel, std::move(options));
}

}  // namespace detail

void SubscriberOptions::validate() const {
  LinkOptions::validate();
  if (!on_message) throw std::invalid_argument("redis: SubscriberOptions::on_message is required");
  if (subscribe_batch == 0) throw std::invalid_argument("redis: subscribe_batch must be > 0");
  if (subscribe_interval.count() <= 0)
    throw std::invalid_argument("redis: subscribe_interval must be positive");
}

Subscriber::Subscriber(LoopWheel& wheel, SubscriberOptions options)
    : core_(detail::make_subscriber(wheel, std::move(options))) {}
Subscriber::~Subscriber() = default;
void Subscriber::start() { core_->start(); }
void Subscriber::stop() { core_->stop(); }
bool Subscriber::started() const noexcept { return core_->started(); }
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
bool Subscriber::connected() const noexcept { return core_->connected(); }
void Subscriber::flush() { core_->flush(); }
LinkStats Subscriber::stats() const noexcept { return core_->stats(); }
std::vector<MasterStats> Subscriber::masters() const { return core_->masters(); }
const SubscriberOptions& Subscriber::options() const noexcept { return core_->options(); }

void Subscriber::follow(Client& client) {
  auto source = client.core_->slot_map_source();
  if (options().cluster.enabled() != (source != nullptr))
    throw std::invalid_argument(
        "redis: Subscriber::follow: the subscriber and the client must both be Redis Cluster "
        "links (cluster.seeds set) or both single-server links");
  if (!source) return;  // one redis-server: no slot map to share
  if (started()) throw std::logic_error("redis: Subscriber::follow must be called before start()");
  core_->follow(std::move(source));
}

}  // namespace heartwheel::redis
