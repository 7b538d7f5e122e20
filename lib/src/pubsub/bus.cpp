// The Bus's operations: publish, join, leave, history, presence. Each runs
// under the channel's shard lock; see bus.h for why offsets are assigned and
// inboxes fed inside one critical section.
#include <heartwheel/pubsub/bus.h>

#include <algorithm>

#include "bus_shard.h"

namespace heartwheel::pubsub {

namespace {

PresencePtr presence_event(EventKind kind, const detail::StoredChannel& ch, std::string_view info) {
  auto event = std::make_shared<PresenceEvent>();
  event->kind = kind;
  event->channel = ch.name;
  event->epoch = ch.epoch;
  event->info = std::string(info);
  event->subscribers = ch.subscribers;
  return event;
}

}  // namespace

PublishResult Bus::publish(std::string_view channel, std::string data, std::string info,
                           const PublishOptions& options) {
  PublishResult result;
  if ((result.error = validate_channel(channel, options_.limits))) return result;
  if (data.size() > options_.limits.max_data_bytes) {
    result.error = errc::data_too_large;
    return result;
  }
  publications_.fetch_add(1, std::memory_order_relaxed);
  Shard& shard = shard_for(channel);
  // At the channel cap an orphan is freed (one shard lock at a time, so
  // never under this one) and the publish tried once more.
  for (bool evicted = false;;) {
    {
      std::lock_guard lock(shard.mu);
      if (publish_locked(shard, channel, data, info, options, result)) break;
    }
    if (evicted || !(evicted = evict_orphan())) {
      channels_refused_.fetch_add(1, std::memory_order_relaxed);
      result.error = errc::too_many_channels;
      return result;
    }
  }
  if (history_bytes_.load(std::memory_order_relaxed) > options_.max_history_bytes) evict_history();
  return result;
}

bool Bus::publish_locked(Shard& shard, std::string_view channel, std::string& data,
                         std::string& info, const PublishOptions& options, PublishResult& result) {
  detail::StoredChannel* ch = shard.find(channel);
  const TimePoint now = options_.clock();
  if (ch != nullptr && !options.idempotency_key.empty() && ch->idempotent) {
    if (const StreamPosition* first = ch->idempotent->find(options.idempotency_key, now)) {
      result.position = *first;  // published once already: not again
      result.duplicate = true;
      return true;
    }
  }
  if (ch == nullptr) {
    const ChannelOptions opts = options_for(channel);
    // Nobody can hear it, now or by recovery (no subscriber has a position
    // in a stream that does not exist): keep nothing, unless this channel's
    // history is read before anyone subscribes.
    if (opts.history_size == 0 || !opts.history_before_subscribers) {
      unheard_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (!take_channel_slot()) return false;
    ch = &shard.add(channel, opts, new_epoch());
    ch->history.count_into(&history_bytes_);
  }
  auto pub = std::make_shared<Publication>();
  pub->kind = EventKind::publication;
  pub->channel = ch->name;
  pub->epoch = ch->epoch;
  pub->offset = ++ch->offset;
  pub->data = std::move(data);
  pub->info = std::move(info);
  pub->time = now;
  if (ch->options.history_size > 0) {
    ch->history.trim(now, ch->options.history_ttl);
    ch->history.push(pub, ch->options.history_size);
  }
  ch->post(pub);
  result.position = {pub->offset, pub->epoch};
  if (!options.idempotency_key.empty()) {
    if (!ch->idempotent) ch->idempotent = std::make_unique<detail::IdempotentResults>();
    ch->idempotent->remember(options.idempotency_key, result.position,
                             deadline_after(now, options.idempotency_window), now);
  }
  return true;
}

SubscribeResult Bus::join(Inbox& inbox, const JoinRequest& request) {
  SubscribeResult result;
  if ((result.error = validate_channel(request.channel, options_.limits))) return result;
  Shard& shard = shard_for(request.channel);
  for (bool evicted = false;;) {  // as in publish: an orphan may make room
    {
      std::lock_guard lock(shard.mu);
      if (join_locked(shard, inbox, request, result)) return result;
    }
    if (evicted || !(evicted = evict_orphan())) {
      channels_refused_.fetch_add(1, std::memory_order_relaxed);
      result.error = errc::too_many_channels;
      return result;
    }
  }
}

bool Bus::join_locked(Shard& shard, Inbox& inbox, const JoinRequest& request,
                      SubscribeResult& result) {
  detail::StoredChannel* ch = shard.find(request.channel);
  if (ch == nullptr) {
    if (!take_channel_slot()) return false;
    ch = &shard.add(request.channel, options_for(request.channel), new_epoch());
    ch->history.count_into(&history_bytes_);
  }
  ++ch->subscribers;
  shard.update_orphan(*ch);
  if (ch->options.history_size > 0) ch->history.trim(options_.clock(), ch->options.history_ttl);

  std::uint64_t upto = request.upto;
  if (request.first_local) {
    ch->inboxes.push_back(&inbox);
    result.seq = ch->seq;
    upto = ch->offset;
  }
  result.position = {upto, ch->epoch};
  if (request.since) {
    result.recovered = request.since->epoch == ch->epoch &&
                       ch->history.collect(request.since->offset, upto, result.publications);
  }
  result.subscribers = ch->subscribers;
  if (ch->options.join_leave) ch->post(presence_event(EventKind::join, *ch, request.info));
  return true;
}

void Bus::leave(Inbox& inbox, std::string_view channel, std::string_view info, bool last_local) {
  Shard& shard = shard_for(channel);
  std::lock_guard lock(shard.mu);
  detail::StoredChannel* ch = shard.find(channel);
  if (ch == nullptr) return;  // a hub never leaves what it did not join; nothing to undo
  if (ch->subscribers > 0) --ch->subscribers;
  if (last_local) std::erase(ch->inboxes, &inbox);
  if (ch->options.join_leave && !ch->inboxes.empty())
    ch->post(presence_event(EventKind::leave, *ch, info));
  shard.update_orphan(*ch);
  if (shard.trim_or_free(*ch, options_.clock())) freed_.fetch_add(1, std::memory_order_relaxed);
}

HistoryResult Bus::history(std::string_view channel, std::size_t limit) {
  HistoryResult result;
  if ((result.error = validate_channel(channel, options_.limits))) return result;
  Shard& shard = shard_for(channel);
  std::lock_guard lock(shard.mu);
  detail::StoredChannel* ch = shard.find(channel);
  if (ch == nullptr) return result;
  if (shard.trim_or_free(*ch, options_.clock())) {  // the stream is gone: say so
    freed_.fetch_add(1, std::memory_order_relaxed);
    return result;
  }
  result.position = {ch->offset, ch->epoch};
  ch->history.latest(limit, result.publications);
  return result;
}

// The Broker calls: the answer is ready at once; `done` runs after the lock
// is released (it may publish, subscribe, ...).
void Bus::publish(Inbox&, std::string_view channel, std::string data, std::string info,
                  const PublishOptions& options, PublishDone done) {
  PublishResult r = publish(channel, std::move(data), std::move(info), options);
  if (done) done(std::move(r));
}

void Bus::join(Inbox& inbox, const JoinRequest& request, JoinDone done) {
  SubscribeResult r = join(inbox, request);
  if (done) done(std::move(r));
}

void Bus::history(Inbox&, std::string_view channel, std::size_t limit, HistoryDone done) {
  HistoryResult r = history(channel, limit);
  if (done) done(std::move(r));
}

void Bus::presence(Inbox&, std::string_view channel, PresenceDone done) {
  PresenceResult r;
  if (!(r.error = validate_channel(channel, options_.limits))) r.subscribers = presence(channel);
  if (done) done(std::move(r));
}

void Bus::remove_history(Inbox&, std::string_view channel, RemoveDone done) {
  const std::error_code ec = remove_history(channel);
  if (done) done(ec);
}

std::error_code Bus::remove_history(std::string_view channel) {
  if (std::error_code ec = validate_channel(channel, options_.limits)) return ec;
  Shard& shard = shard_for(channel);
  std::lock_guard lock(shard.mu);
  // The offset and epoch stay (a channel without subscribers and now
  // without history is freed by the next sweep, as any other).
  if (detail::StoredChannel* ch = shard.find(channel)) ch->history.clear();
  return {};
}

std::uint64_t Bus::presence(std::string_view channel) {
  Shard& shard = shard_for(channel);
  std::lock_guard lock(shard.mu);
  const detail::StoredChannel* ch = shard.find(channel);
  return ch ? ch->subscribers : 0;
}

}  // namespace heartwheel::pubsub
