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
  open_loop();  // throws before anything is attached
  broker_.attach(*this);
}

Hub::~Hub() {
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

SubscribeResult Hub::subscribe(Subscriber& subscriber, std::string_view channel,
                               const SubscribeOptions& options) {
  SubscribeResult result;
  LocalChannel* ch = find(channel);
  if (auto ec = validate_channel(channel, limits_)) {
    result.error = ec;
  } else if (subscriber.hub_ != nullptr && subscriber.hub_ != this) {
    result.error = errc::wrong_hub;
  } else if (ch != nullptr && find_subscription(subscriber, ch) != nullptr) {
    result.error = errc::already_subscribed;
  } else if (subscriber.count_ >= limits_.channel_limit) {
    result.error = errc::channel_limit;
  }
  if (result.error) {
    ++stats_.subscribe_errors;
    return result;
  }
  // Allocate before the broker counts the join, so a failure changes nothing.
  auto node = std::make_unique<Subscription>();
  std::unique_ptr<LocalChannel> made;
  if (ch == nullptr) {
    made = std::make_unique<LocalChannel>(channel);
  }
  LocalChannel* target = ch ? ch : made.get();
  const bool first_local = target->count == 0;
  result = broker_.join(*this, JoinRequest{channel, subscriber.presence_info_, first_local,
                                           target->delivered_offset, options.since});
  if (result.error) {
    ++stats_.subscribe_errors;
    return result;
  }
  if (made) {
    LocalChannel* raw = made.release();
    channels_.emplace(raw->name, raw);
  }
  if (first_local) {
    target->epoch = result.position.epoch;
    target->delivered_offset = result.position.offset;
    target->delivered_seq = result.seq;
  }
  // Link at the head: a fan-out in progress walks towards the tail, so a
  // subscriber added from a callback does not get the event being delivered.
  Subscription* s = node.release();
  s->channel = target;
  s->subscriber = &subscriber;
  s->next = target->head;
  if (target->head) target->head->prev = s;
  target->head = s;
  ++target->count;
  s->next_of_subscriber = subscriber.subscriptions_;
  subscriber.subscriptions_ = s;
  ++subscriber.count_;
  subscriber.hub_ = this;

  ++stats_.subscribes;
  ++stats_.subscriptions;
  if (options.since) ++(result.recovered ? stats_.recovered : stats_.not_recovered);
  return result;
}

std::error_code Hub::unsubscribe(Subscriber& subscriber, std::string_view channel) {
  LocalChannel* ch = subscriber.hub_ == this ? find(channel) : nullptr;
  Subscription* s = ch ? find_subscription(subscriber, ch) : nullptr;
  if (s == nullptr) return errc::not_subscribed;
  remove(s);
  return {};
}

std::size_t Hub::unsubscribe_all(Subscriber& subscriber) {
  if (subscriber.hub_ != this) return 0;
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
  if (cursor_ == s) cursor_ = s->next;  // the fan-out in progress skips it
  (s->prev ? s->prev->next : ch->head) = s->next;
  if (s->next) s->next->prev = s->prev;
  for (Subscription** p = &sub->subscriptions_; *p != nullptr; p = &(*p)->next_of_subscriber) {
    if (*p == s) {
      *p = s->next_of_subscriber;
      break;
    }
  }
  --ch->count;
  if (--sub->count_ == 0) sub->hub_ = nullptr;
  ++stats_.unsubscribes;
  --stats_.subscriptions;
  delete s;
  broker_.leave(*this, ch->name, sub->presence_info_, ch->count == 0);
  release_if_empty(ch);
}

void Hub::release_if_empty(LocalChannel* ch) noexcept {
  if (ch->count != 0 || ch == fanning_) return;  // a running fan-out frees it when done
  channels_.erase(ch->name);
  delete ch;
}

PublishResult Hub::publish(std::string_view channel, std::string data, std::string info) {
  PublishResult result = broker_.publish(channel, std::move(data), std::move(info));
  ++(result.error ? stats_.publish_errors : stats_.publications);
  return result;
}

HistoryResult Hub::history(std::string_view channel, std::size_t limit) {
  return broker_.history(channel, limit);
}

std::uint64_t Hub::presence(std::string_view channel) { return broker_.presence(channel); }

bool Hub::subscribed(const Subscriber& subscriber, std::string_view channel) const {
  const LocalChannel* ch = subscriber.hub_ == this ? find(channel) : nullptr;
  return ch != nullptr && find_subscription(subscriber, ch) != nullptr;
}

std::size_t Hub::local_subscribers(std::string_view channel) const {
  const LocalChannel* ch = find(channel);
  return ch ? ch->count : 0;
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
