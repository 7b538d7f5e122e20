// Hub: subscriptions (subscribe, unsubscribe, limits) and queries. Delivery
// is in hub_delivery.cpp, the libuv plumbing in hub_loop.cpp.
#include <heartwheel/pubsub/hub.h>

#include <memory>
#include <stdexcept>

#include "local_channel.h"

namespace heartwheel::pubsub {

using detail::LocalChannel;
using detail::Subscription;

void HubOptions::validate() const {
  if (max_events_per_wakeup == 0)
    throw std::invalid_argument("pubsub: max_events_per_wakeup must be at least 1");
}

Hub::Hub(Broker& broker, HubOptions options)
    : broker_(broker), options_(std::move(options)), limits_(broker.limits()) {
  options_.validate();
  more_frames_.resize(options_.more_encodings.size());  // frame_as allocates no slot
  open_loop();  // throws before anything is attached
  broker_.attach(*this);
}

namespace {
bool is_pending(const Subscription* s) noexcept { return s->prev == s && s->next == s; }
}  // namespace

void Hub::unlink_from_subscriber(Subscription* s) noexcept {
  Subscriber* sub = s->subscriber;
  if (sub == nullptr) return;
  for (Subscription** p = &sub->subscriptions_; *p != nullptr; p = &(*p)->next_of_subscriber) {
    if (*p == s) {
      *p = s->next_of_subscriber;
      break;
    }
  }
}

Hub::~Hub() {
  // Joins still unanswered: their answers will never run (the inbox is freed
  // below, and nothing is posted after detach); undo them in the broker.
  for (Subscription* s : pending_) {
    LocalChannel* ch = s->channel;
    --ch->pending;
    std::string info;
    if (Subscriber* sub = s->subscriber) {
      info = sub->presence_info();
      unlink_from_subscriber(s);
    }
    broker_.leave(*this, ch->name, info, ch->count == 0 && ch->pending == 0);
    delete s;
  }
  pending_.clear();
  // Everyone still subscribed leaves (the broker counts presence and posts
  // leave events to other hubs); no callback of theirs runs.
  while (!channels_.empty()) {
    LocalChannel* ch = channels_.begin()->second;
    if (ch->head != nullptr) {
      remove(ch->head);  // the last one frees ch
    } else {
      channels_.erase(channels_.begin());
      delete ch;
    }
  }
  broker_.detach(*this);
  // Every post happened under a broker lock our leaves took afterwards: the
  // inbox is complete, nothing is mid-push.
  while (Envelope* e = inbox_.pop()) delete e;
  close_loop();
}

LocalChannel* Hub::find(std::string_view channel) const noexcept {
  auto it = channels_.find(channel);
  return it == channels_.end() ? nullptr : it->second;
}

Subscription* Hub::find_subscription(const Subscriber& subscriber,
                                     const LocalChannel* channel) const noexcept {
  for (Subscription* s = subscriber.subscriptions_; s != nullptr; s = s->next_of_subscriber)
    if (s->channel == channel) return s;
  return nullptr;
}

void Hub::require_inline(const char* what) const {
  if (!broker_.completes_inline())
    throw std::logic_error(std::string("pubsub: Hub::") + what +
                           " without a callback needs a broker that answers at once (the Bus); "
                           "pass a callback");
}

SubscribeResult Hub::subscribe(Subscriber& subscriber, std::string_view channel,
                               const SubscribeOptions& options) {
  require_inline("subscribe");
  SubscribeResult out;
  subscribe(subscriber, channel, options, [&out](SubscribeResult r) { out = std::move(r); });
  return out;
}

void Hub::subscribe(Subscriber& subscriber, std::string_view channel,
                    const SubscribeOptions& options, JoinDone done) {
  SubscribeResult result;
  LocalChannel* ch = find(channel);
  if (auto ec = validate_channel(channel, limits_)) {
    result.error = ec;
  } else if (subscriber.hub() != nullptr && subscriber.hub() != this) {
    result.error = errc::wrong_hub;
  } else if (ch != nullptr && find_subscription(subscriber, ch) != nullptr) {
    result.error = errc::already_subscribed;
  } else if (subscriber.channel_count() >= limits_.channel_limit) {
    result.error = errc::channel_limit;
  }
  if (result.error) {
    ++stats_.subscribe_errors;
    if (done) done(std::move(result));
    return;
  }
  // The subscription exists from now on, pending (linked to its subscriber
  // only) until the broker answers: limits and duplicates see it, and
  // unsubscribe() can cancel it.
  auto node = std::make_unique<Subscription>();
  if (ch == nullptr) {
    auto made = std::make_unique<LocalChannel>(channel, *this);
    ch = made.get();
    channels_.emplace(ch->name, made.release());
  }
  const bool first_local = ch->count == 0 && ch->pending == 0;
  Subscription* s = node.release();
  s->prev = s->next = s;  // pending
  s->channel = ch;
  s->subscriber = &subscriber;
  s->next_of_subscriber = subscriber.subscriptions_;
  subscriber.subscriptions_ = s;  // on this hub from now on (Subscriber::hub)
  ++ch->pending;
  // (A broker that completes inline answers before join() returns: the
  // node is never pending after this call, so it is not tracked.)
  if (!broker_.completes_inline()) pending_.insert(s);
  broker_.join(*this,
               JoinRequest{channel, subscriber.presence_info(), first_local, ch->delivered_offset,
                           options.since},
               [this, s, first_local, info = std::string(subscriber.presence_info()),
                since = options.since.has_value(), done = std::move(done)](SubscribeResult r) {
                 if (since && !r.error) ++(r.recovered ? stats_.recovered : stats_.not_recovered);
                 on_joined(s, first_local, info, std::move(r), done);
               });
}

void Hub::on_joined(Subscription* s, bool first_local, const std::string& info,
                    SubscribeResult result, const JoinDone& done) noexcept {
  pending_.erase(s);
  LocalChannel* ch = s->channel;
  Subscriber* sub = s->subscriber;
  --ch->pending;
  if (result.error) {
    ++stats_.subscribe_errors;
    if (sub != nullptr) {
      unlink_from_subscriber(s);
    }
    delete s;
    release_if_empty(ch);
  } else {
    if (first_local) {
      ch->epoch = result.position.epoch;
      ch->delivered_offset = result.position.offset;
      ch->delivered_seq = result.seq;
    }
    ++stats_.subscribes;
    if (sub == nullptr) {  // unsubscribed before the answer came: undo the join
      ++stats_.unsubscribes;
      delete s;
      broker_.leave(*this, ch->name, info, ch->count == 0 && ch->pending == 0);
      release_if_empty(ch);
    } else {
      // Link at the head: a fan-out in progress walks towards the tail, so a
      // subscriber added from a callback does not get the event being delivered.
      s->prev = nullptr;
      s->next = ch->head;
      if (ch->head) ch->head->prev = s;
      ch->head = s;
      ++ch->count;
      ++stats_.subscriptions;
    }
  }
  if (!done) return;
  try {
    done(std::move(result));
  } catch (...) {
    ++stats_.subscriber_errors;
  }
}

std::error_code Hub::unsubscribe(Subscriber& subscriber, std::string_view channel) {
  LocalChannel* ch = subscriber.hub() == this ? find(channel) : nullptr;
  Subscription* s = ch ? find_subscription(subscriber, ch) : nullptr;
  if (s == nullptr) return errc::not_subscribed;
  remove(s);
  return {};
}

std::size_t Hub::unsubscribe_all(Subscriber& subscriber) {
  if (subscriber.hub() != this) return 0;
  std::size_t n = 0;
  while (subscriber.subscriptions_ != nullptr) {
    remove(subscriber.subscriptions_);
    ++n;
  }
  return n;
}

void Hub::remove(Subscription* s) noexcept {
  LocalChannel* ch = s->channel;
  Subscriber* sub = s->subscriber;
  if (is_pending(s)) {  // cancelled: on_joined undoes the join when the answer comes
    unlink_from_subscriber(s);
    s->subscriber = nullptr;
    return;
  }
  if (cursor_ == s) cursor_ = s->next;  // the fan-out in progress skips it
  (s->prev ? s->prev->next : ch->head) = s->next;
  if (s->next) s->next->prev = s->prev;
  unlink_from_subscriber(s);
  --ch->count;
  ++stats_.unsubscribes;
  --stats_.subscriptions;
  delete s;
  broker_.leave(*this, ch->name, sub->presence_info(), ch->count == 0 && ch->pending == 0);
  release_if_empty(ch);
}

void Hub::release_if_empty(LocalChannel* ch) noexcept {
  if (ch->count != 0 || ch->pending != 0 || ch == fanning_)
    return;  // a running fan-out frees it when done
  channels_.erase(ch->name);
  delete ch;
}

void Hub::publish(std::string_view channel, std::string data, std::string info, PublishDone done) {
  publish(channel, std::move(data), std::move(info), PublishOptions{}, std::move(done));
}

void Hub::publish(std::string_view channel, std::string data, std::string info,
                  const PublishOptions& options, PublishDone done) {
  broker_.publish(*this, channel, std::move(data), std::move(info), options,
                  [this, done = std::move(done)](PublishResult r) {
                    ++(r.error ? stats_.publish_errors : stats_.publications);
                    if (done) done(std::move(r));
                  });
}

PublishResult Hub::publish(std::string_view channel, std::string data, std::string info) {
  require_inline("publish");
  // Straight to the broker with a callback that fits std::function's inline
  // buffer: no allocation on this path (the bench counts them).
  PublishResult out;
  broker_.publish(*this, channel, std::move(data), std::move(info),
                  [&out](PublishResult r) { out = std::move(r); });
  ++(out.error ? stats_.publish_errors : stats_.publications);
  return out;
}

void Hub::history(std::string_view channel, std::size_t limit, HistoryDone done) {
  broker_.history(*this, channel, limit, std::move(done));
}

HistoryResult Hub::history(std::string_view channel, std::size_t limit) {
  require_inline("history");
  HistoryResult out;
  history(channel, limit, [&out](HistoryResult r) { out = std::move(r); });
  return out;
}

void Hub::presence(std::string_view channel, PresenceDone done) {
  broker_.presence(*this, channel, std::move(done));
}

void Hub::remove_history(std::string_view channel, RemoveDone done) {
  broker_.remove_history(*this, channel, std::move(done));
}

std::uint64_t Hub::presence(std::string_view channel) {
  require_inline("presence");
  PresenceResult out;
  presence(channel, [&out](PresenceResult r) { out = std::move(r); });
  return out.subscribers;
}

bool Hub::subscribed(const Subscriber& subscriber, std::string_view channel) const {
  const LocalChannel* ch = subscriber.hub() == this ? find(channel) : nullptr;
  return ch != nullptr && find_subscription(subscriber, ch) != nullptr;
}

std::size_t Hub::local_subscribers(std::string_view channel) const {
  const LocalChannel* ch = find(channel);
  return ch ? ch->count : 0;
}

std::vector<Hub::LocalCount> Hub::local_channels() const {
  std::vector<LocalCount> out;
  out.reserve(channels_.size());
  for (const auto& [name, ch] : channels_)
    if (ch->count + ch->pending > 0) out.push_back({std::string(name), ch->count + ch->pending});
  return out;
}

HubStats Hub::stats() const {
  HubStats s = stats_;
  s.channels = 0;
  for (const auto& [name, ch] : channels_) s.channels += ch->count > 0 ? 1 : 0;
  return s;
}

std::optional<ChannelStats> Hub::channel_stats(std::string_view channel) const {
  const LocalChannel* ch = find(channel);
  if (ch == nullptr) return std::nullopt;
  return ch->stats;
}

}  // namespace heartwheel::pubsub
