// heartwheel/pubsub/bus.h - the in-process broker: one per process, shared by
// the hubs of every loop thread. It orders each channel's publications, keeps
// their history and presence, and hands every event to the hubs that have
// subscribers of its channel.
//
// Design: a store sharded by channel name, one mutex per shard
//   publish(channel) on any thread locks the channel's shard, takes the next
//   offset, appends to the channel's history ring, and - still under the lock
//   - posts one Envelope to each interested hub's MPSC inbox, then unlocks.
//   Because the offset is taken and every inbox is fed inside one critical
//   section, each inbox receives a channel's publications in offset order
//   (the queue is FIFO), so every hub's subscribers see 1, 2, 3, ... with no
//   gap and no reordering, whichever threads published. The alternative - a
//   home worker per channel that assigns offsets - would add a thread hop to
//   every publish and turn every recovery and history read into a
//   cross-thread request; the lock here is held for a ring append and a few
//   wait-free pushes, and different channels rarely share a shard.
//   A hub's wake-up (uv_async_send) is one per batch: the inbox sends it only
//   when the hub is not already due to wake.
//
// History
//   A channel's ring keeps its latest ChannelOptions::history_size
//   publications, each for history_ttl after it was published (on this bus's
//   clock). Expired ones are dropped on the channel's next publish or read,
//   and by sweep(). A channel's state (offsets, epoch, ring, presence) exists
//   while it has subscribers or unexpired history, and is freed otherwise:
//   one-off channels leave nothing behind. A publish to a channel without
//   state reaches no one and makes none (answered offset 0, epoch "",
//   counted as unheard), unless its ChannelOptions keep history before
//   subscribers: a stranger publishing to ever new names then costs
//   nothing. When a channel's state is made again it gets a new random
//   epoch, so a client holding an old position learns that its history is
//   gone (recovered: false). A restart loses everything, with the same
//   answer to clients.
//
// The channel cap (max_channels)
//   Channels with subscribers are bounded per connection by
//   Limits::channel_limit (128 each); every other channel is an orphan, kept
//   only by its history. When a join (or a publish that makes state) finds
//   the cap reached, it frees an orphan first: the oldest of the next shard
//   in turn that has one (its history is lost early: recovered: false, as
//   after its TTL; counted in BusStats::channels_evicted). Only when no
//   shard holds an orphan is the new channel refused (too_many_channels).
//   So one client churning through names cannot lock others out: it holds
//   at most channel_limit channels per connection.
//
// Cost
//   publish: O(interested hubs) + one allocation per interested hub (its
//   envelope) + the Publication; never per subscriber. join/leave: O(hubs on
//   the channel), plus O(recovered) copies of shared_ptrs. sweep: O(channels
//   that have history but no subscribers). Memory per channel with state:
//   ~300 bytes + its name + the ring (16 bytes a slot) + the publications it
//   holds (each ~250 bytes + its data, info and channel name: history_ring.h).
//
// Threads: every method, any thread. The bus must outlive every hub attached
//   to it (the destructor checks, and aborts with a message otherwise).
#pragma once

#include <heartwheel/pubsub/broker.h>
#include <heartwheel/pubsub/stats.h>
#include <heartwheel/common/time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace heartwheel::pubsub {

// Per channel (Centrifugo's namespace options). Chosen when the channel's
// state is made, kept until it is freed.
struct ChannelOptions {
  // Publications kept for recovery and history(); 0 = no history.
  std::size_t history_size = 0;
  // How long each is kept; required (> 0) when history_size > 0, so a
  // channel nobody listens to is freed in the end.
  Duration history_ttl{0};
  // Post join and leave events to the channel's subscribers. The count
  // (presence()) is kept either way: it is free.
  bool join_leave = false;
  // A publish to a channel that has no state (nobody subscribed, no history
  // left) makes its state and keeps the publication in history (true; needs
  // history_size > 0), or reaches no one and keeps nothing (false: answered
  // offset 0, epoch "", BusStats::unheard). For namespaces whose history is
  // read before anyone subscribes; such channels start as orphans (see "The
  // channel cap" above). The Bus's only: the RedisBroker keeps every
  // publication in its channel's stream in Redis.
  bool history_before_subscribers = false;

  // Throws std::invalid_argument naming the field.
  void validate() const;
};

struct BusOptions {
  Limits limits;
  // For every channel, unless channel_options says otherwise.
  ChannelOptions channel;
  // Optional: options by channel name (e.g. by prefix, "chat:" with history,
  // "typing:" without). Called under a shard lock when a channel's state is
  // made, from any thread: it must be thread-safe and quick. Its result is
  // validated; an invalid one is replaced by `channel` and counted
  // (BusStats::bad_channel_options).
  std::function<ChannelOptions(std::string_view channel)> channel_options;
  // The clock of publication times and TTLs; called from any thread, under a
  // shard lock. Default: heartwheel::Clock (steady). Tests pass a manual one.
  std::function<TimePoint()> clock;
  // Shards of the channel store (each a mutex and a hash map). Power of two.
  std::size_t shards = 64;
  // How often hubs on a loop call sweep().
  Duration sweep_interval = std::chrono::seconds(1);
  // Channels with state (subscribers or history) at once, process-wide: a
  // join (or a publish that makes state) that would make one more frees the
  // oldest orphan of a shard first (BusStats::channels_evicted), and is
  // refused with errc::too_many_channels only when there is none (counted:
  // BusStats::channels_refused). See "The channel cap" above.
  std::size_t max_channels = 100000;
  // The memory every channel's history holds together, counted as malloc
  // holds it: each publication's object and strings (data, info, its copy
  // of the channel name, the epoch) and the ring slots (history_ring.h).
  // Past it, the oldest publications of the largest histories are dropped
  // (counted: BusStats::history_evictions) until 90% of it is left; a
  // recovery that needed them answers recovered = false. The channels'
  // own state (~300 bytes + the name, each) is bounded by max_channels.
  std::size_t max_history_bytes = std::size_t{256} << 20;

  // Throws std::invalid_argument naming the field.
  void validate() const;
};

class Bus final : public Broker {
 public:
  // Validates options (throws std::invalid_argument).
  explicit Bus(BusOptions options = {});
  ~Bus() override;

  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;

  const Limits& limits() const noexcept override { return options_.limits; }
  bool completes_inline() const noexcept override { return true; }

  // Broker: each answers before returning, outside the shard lock.
  using Broker::publish;
  void publish(Inbox& from, std::string_view channel, std::string data, std::string info,
               const PublishOptions& options, PublishDone done) override;
  void join(Inbox& inbox, const JoinRequest& request, JoinDone done) override;
  void leave(Inbox& inbox, std::string_view channel, std::string_view info,
             bool last_local) override;
  void history(Inbox& from, std::string_view channel, std::size_t limit, HistoryDone done) override;
  void presence(Inbox& from, std::string_view channel, PresenceDone done) override;
  void remove_history(Inbox& from, std::string_view channel, RemoveDone done) override;

  // The same, answered as return values, from any thread (a publisher with no
  // hub, tests).
  PublishResult publish(std::string_view channel, std::string data, std::string info = {},
                        const PublishOptions& options = {});
  SubscribeResult join(Inbox& inbox, const JoinRequest& request);
  HistoryResult history(std::string_view channel, std::size_t limit);
  std::uint64_t presence(std::string_view channel);
  std::error_code remove_history(std::string_view channel);

  void sweep() override;
  Duration sweep_interval() const noexcept override { return options_.sweep_interval; }
  void attach(Inbox& inbox) override;
  void detach(Inbox& inbox) noexcept override;

  // The bus's clock, now.
  TimePoint now() const { return options_.clock(); }
  // Counters and gauges (locks each shard in turn for the gauges).
  BusStats stats() const;

 private:
  struct Shard;
  Shard& shard_for(std::string_view channel) const noexcept;
  std::string new_epoch() noexcept;
  ChannelOptions options_for(std::string_view channel) noexcept;
  // bus_limits.cpp: a slot for one more channel (false at max_channels);
  // an orphan freed to make room (false: none anywhere; takes one shard
  // lock at a time: call without any); the history budget enforced
  // (called without any shard lock).
  bool take_channel_slot() noexcept;
  bool evict_orphan();
  // Under the channel's shard lock. False: a new channel is needed and the
  // cap is reached (nothing done); `result` is untouched then.
  bool publish_locked(Shard& shard, std::string_view channel, std::string& data, std::string& info,
                      const PublishOptions& options, PublishResult& result);
  bool join_locked(Shard& shard, Inbox& inbox, const JoinRequest& request, SubscribeResult& result);
  void evict_history();

  BusOptions options_;
  std::unique_ptr<Shard[]> shards_;
  std::uint64_t epoch_seed_;
  std::atomic<std::uint64_t> epoch_counter_{0};
  std::atomic<std::uint64_t> hubs_{0};
  std::atomic<std::uint64_t> publications_{0};
  std::atomic<std::uint64_t> epochs_{0};
  std::atomic<std::uint64_t> freed_{0};
  std::atomic<std::uint64_t> bad_channel_options_{0};
  std::atomic<std::uint64_t> channels_made_{0};  // live channels: made - freed
  std::atomic<std::uint64_t> channels_refused_{0};
  std::atomic<std::uint64_t> channels_evicted_{0};
  std::atomic<std::uint64_t> unheard_{0};
  std::atomic<std::size_t> evict_cursor_{0};   // the shard evict_orphan looks at first
  std::atomic<std::size_t> history_bytes_{0};  // every ring's bytes (HistoryRing::count_into)
  std::atomic<std::uint64_t> history_evictions_{0};
  std::atomic<bool> evicting_{false};
};

}  // namespace heartwheel::pubsub
