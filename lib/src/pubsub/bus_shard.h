// Private: the Bus's channel store. A shard is a mutex and the channels whose
// names hash to it; everything about a channel is read and written under its
// shard's mutex.
#pragma once

#include <heartwheel/pubsub/broker.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/keyed_hash.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "history_ring.h"

namespace heartwheel::pubsub::detail {

// The results of a channel's publishes made with an idempotency key
// (PublishOptions), until their window passes: made at the channel's first
// such publish, so other channels pay one null pointer.
struct IdempotentResults {
  // The result of the publish that had `key`, if its window has not passed
  // at `now` (expired ones are forgotten on the way).
  const StreamPosition* find(const std::string& key, TimePoint now);
  void remember(const std::string& key, const StreamPosition& result, TimePoint until,
                TimePoint now);

 private:
  void forget_expired(TimePoint now);
  std::unordered_map<std::string, StreamPosition> results_;
  std::deque<std::pair<TimePoint, std::string>> expiry_;  // in the order remembered
};

struct StoredChannel {
  std::string name;
  std::string epoch;
  ChannelOptions options;
  std::uint64_t offset = 0;       // the last publication's offset
  std::uint64_t seq = 0;          // the last event's seq (publications and presence)
  std::uint64_t subscribers = 0;  // over every hub
  std::vector<Inbox*> inboxes;    // hubs with local subscribers: posted every event
  HistoryRing history;
  // In Shard's orphan list while the channel has no subscribers (then only
  // its history keeps it, until sweep() finds it expired, or the channel
  // cap evicts it).
  bool orphan = false;
  StoredChannel* orphan_prev = nullptr;  // the orphan made before this one
  StoredChannel* orphan_next = nullptr;  // the one made after
  std::unique_ptr<IdempotentResults> idempotent;  // keyed publishes' results, if any

  // Posts `event` (as the next seq) to every interested inbox.
  void post(const EventPtr& event);
};

// Channel names are the client's choice: keyed, so collisions cannot be
// precomputed (heartwheel/pubsub/keyed_hash.h).
using StringHash = KeyedStringHash;

}  // namespace heartwheel::pubsub::detail

namespace heartwheel::pubsub {

struct Bus::Shard {
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<detail::StoredChannel>, detail::StringHash,
                     std::equal_to<>>
      channels;
  // The channels with history and no subscribers, oldest orphan first
  // (intrusive: O(1) to add and remove, in the order they lost their last
  // subscriber or were made without one).
  detail::StoredChannel* oldest_orphan = nullptr;
  detail::StoredChannel* newest_orphan = nullptr;

  detail::StoredChannel* find(std::string_view name) const {
    auto it = channels.find(name);
    return it == channels.end() ? nullptr : it->second.get();
  }
  // A new channel (no subscribers yet); the caller holds the lock.
  detail::StoredChannel& add(std::string_view name, const ChannelOptions& options,
                             std::string epoch);
  // Keeps the orphan list in step with ch.subscribers == 0.
  void update_orphan(detail::StoredChannel& ch);
  void remove_orphan(detail::StoredChannel& ch);
  // Drops expired history; frees the channel (returns true) when it has
  // neither subscribers nor history left.
  bool trim_or_free(detail::StoredChannel& ch, TimePoint now);
  // Frees the oldest orphan, history and all (its bytes leave the bus's
  // total). False when the shard has none.
  bool free_oldest_orphan();
};

}  // namespace heartwheel::pubsub
