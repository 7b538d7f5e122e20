// heartwheel/push/delayed_queue.h - durable delayed pushes: stored in Redis,
// timed on the wheel, delivered once by one of several nodes.
//
// What it is (QMQ's delayed messages, on Redis and the timing wheel)
//   schedule(channel, data, due) stores the push in Redis BEFORE its callback
//   says yes: one Lua script puts the payload in a hash and the due time (ms
//   since the Unix epoch, wall clock, to the microsecond) in a sorted set. Each node's queue
//   loads, ahead of time, the pushes due within `window` and holds them in
//   due-time order behind one wheel entry ("Order"), extending the loaded
//   window every `load_interval`; a push this queue accepts for a due time
//   inside the loaded window is held at once. When it comes due, the push
//   is CLAIMED in Redis by a script that removes it from the due set only if
//   it is still there and moves it to a claims set with a lease deadline: of
//   all the nodes that loaded it, exactly one gets the payload. That one calls
//   `deliver` and then acknowledges (deletes claim and payload). A reaper on
//   the wheel re-queues claims whose lease ran out (their node died between
//   claim and acknowledgement): delivery is at-least-once across node
//   crashes, exactly-once among nodes that stay up.
//
//   Keys (prefix P = options.key_prefix, T = a partition's hash tag): the
//   queue is split into options.partitions partitions, each its own three
//   keys P{T}due (sorted set id -> due ms, a fraction for the us), P{T}data (hash id -> channel and
//   data), P{T}claims (sorted set id -> lease deadline ms). A push's
//   partition is CRC16(id) mod partitions; the tags spread the partitions
//   evenly over Redis Cluster's slots (redis::Partitions), so on a cluster
//   the queue's load is shared by every master, and every script still
//   touches one slot (a claim stays atomic: it is within one partition).
//   Each node loads its window from every partition. Every node of one
//   deployment uses the same prefix and the same number of partitions.
//   Pushes stored by a version before partitions (keys P"due" ...) are not
//   read: no migration is made.
//
// Order (issue 34)
//   A queue claims the pushes it holds in (due time, then id) order and
//   delivers what it claimed in the order it claimed it, so the pushes one
//   queue delivers come in due-time order. Due times are kept to the
//   microsecond: the due set's score is the due time in ms with a fraction
//   (1795461343099.123; a push stored by an older version has a whole
//   number, read as such), so a push loaded from Redis has the same place
//   as one held since its schedule. Pushes scheduled one after another from
//   accept_time() with one delay have increasing due times: they are
//   delivered in the order they were accepted. What does NOT hold: pushes
//   of one channel delivered by DIFFERENT queues (nodes, workers) race once
//   claimed (each queue publishes what it won), so two due within one tick
//   plus a few Redis round trips of each other may swap; a push whose claim
//   failed (retried after retry_interval) or whose node died (re-queued
//   after its lease) comes after pushes due later. On a Redis Cluster a
//   queue's claims go to several masters: a claimed push waits for the
//   replies to the claims sent before it (at most the Client's
//   command_timeout, when a master is unreachable).
//   The wheel is not what orders them: one wheel entry is armed for the
//   earliest push held, and the pushes wait in an ordered index (O(log n)
//   per held push), since a wheel runs entries due on one tick in no
//   particular order (timing_wheel.h, SameTickOrder).
//
// Pending per owner
//   Every push is counted in its owner's pending count (the empty owner is
//   one owner too) by the script that stores it, and uncounted by the script
//   that removes its payload (the acknowledgement after delivery, or a
//   cancel): the count is what Redis holds, across nodes and restarts, and a
//   resent schedule or acknowledgement counts once. With
//   max_pending_per_owner set, a schedule that would pass it stores nothing
//   and its callback gets heartwheel::errc::limit_reached. The counts live
//   in the hash P"owners" on one redis-server, checked exactly. On a Redis
//   Cluster a script may touch one slot only, so each partition has its own
//   P{T}owners and holds at most ceil(max / partitions) pushes of an owner:
//   the total never passes max + partitions - 1, and an owner whose pushes
//   happen to crowd one partition is refused a little before max. Pushes
//   stored by a version before the counts are not counted.
//
// Guarantees
//   - A push whose schedule callback got no error is in Redis (as durable as
//     Redis is configured to be: appendonly + appendfsync for restarts of
//     Redis itself) and is delivered by some node unless cancelled.
//   - Never delivered before its due time (by this machine's wall clock);
//     normally at most one wheel tick plus a Redis round trip after it, as
//     long as some node runs. A restart (of one node or all) delivers what
//     came due meanwhile at once.
//   - A push held in one node's wheel only (accepted there after the other
//     nodes had loaded that part of the window) is taken over by every other
//     node's load once it is `takeover_grace` overdue and unclaimed.
//   - While Redis is unreachable nothing is lost: schedule and cancel fail
//     (callback error), loads fail and are retried, fired pushes whose claim
//     fails are retried every `retry_interval`. A claim whose reply was lost
//     (disconnected, timed out) may have run: if it did, the push waits in
//     the claims set and the reaper re-queues it after the lease.
//
// Outcomes of schedule() / cancel(): either an error at once (the Client
//   refused the command: redis::errc::stopped, buffer_full, not_connected,
//   heartwheel::errc::limit_reached; also std::errc::invalid_argument for a
//   bad argument) and the callback never runs, or the callback runs exactly
//   once, later, with the Client's outcome (timed_out, disconnected,
//   server_error) or success.
//
// Ownership: the application owns the queue, the Client and the wheel; the
//   queue must be destroyed (or stopped) before the Client and the wheel.
//   Callbacks of commands still pending when the queue is destroyed do
//   nothing. Threads: the wheel's loop thread only (like the Client).
// Re-entrancy: `deliver` and the callbacks may call schedule() and cancel();
//   they must not destroy the queue.
// Durability: schedule() is a durable write (redis::CommandOptions::
//   durable): with the Client's wait_replicas set, its callback says yes
//   only once that many replicas have the push, and gets
//   redis::errc::not_replicated otherwise (the push is on the master, and a
//   failover before it replicates may lose it).
//
// Cost: per loaded push one ~100-byte node (TimerEntry + id) in a hash map
//   and an O(log n) insert into the ordered index of held pushes (n: the
//   pushes held); per fired push one claim script and one
//   acknowledgement (pipelined with everything else of that loop
//   iteration); per load two ZRANGE BYSCORE queries per partition,
//   returning only what is new; per reap one script per partition,
//   O(expired claims).
#pragma once

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/push/delayed_stats.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/slot.h>
#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_entry.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace heartwheel::push {

// Due times are wall-clock times: they are shared by every node.
using WallClock = std::chrono::system_clock;
using WallTime = WallClock::time_point;

// Milliseconds since the Unix epoch, as stored in Redis.
std::int64_t to_unix_ms(WallTime t) noexcept;
WallTime from_unix_ms(std::int64_t ms) noexcept;

// A random UUIDv4 (122 random bits from getrandom(2)): a push's id. Throws
// std::system_error if the kernel's generator fails.
std::string random_id();

struct DelayedPush {
  // A random UUIDv4 (122 random bits from getrandom(2)), made by schedule():
  // knowing one id tells nothing about any other.
  std::string id;
  std::string channel;
  std::string data;
  WallTime due{};
  // Who created it (e.g. an API key's id; empty: nobody in particular). Only
  // a cancel naming the same owner, or one that names none, removes it.
  std::string owner;
};

struct DelayedQueueOptions {
  // Prefix of the keys (see above). No braces.
  std::string key_prefix = "heartwheel:push:";
  // Partitions of the queue (see above), 1..16384; the same on every node.
  std::size_t partitions = 16;
  // Pushes due within this are held in the wheel (QMQ's load-ahead window).
  Duration window = std::chrono::seconds(60);
  // How often the loaded window is extended (and overdue pushes looked for).
  Duration load_interval = std::chrono::seconds(1);
  // A push this long overdue and still unclaimed is loaded by every node:
  // the node that held it alone may have died.
  Duration takeover_grace = std::chrono::seconds(2);
  // A claim's lease: a node that claimed a push and did not acknowledge it
  // within this long is taken for dead and the push is re-queued.
  Duration lease = std::chrono::seconds(30);
  // How often expired claims are looked for.
  Duration reap_interval = std::chrono::seconds(1);
  // A fired push whose claim failed (Redis down, timeout) is tried again
  // after this; a failed load too.
  Duration retry_interval = std::chrono::milliseconds(500);
  // Pushes per ZRANGE page.
  std::size_t load_batch = 10000;
  // At most this many pushes per owner stored and not yet delivered (acked)
  // or cancelled, across every node (0: no cap). See "Pending per owner".
  std::size_t max_pending_per_owner = 0;
  // The wall clock; empty: WallClock::now. Tests may shift it.
  std::function<WallTime()> clock;

  // Throws std::invalid_argument naming the field.
  void validate() const;
};

// Called for each push this node claimed, on the loop thread; the
// acknowledgement follows when it returns. An exception counts as
// deliver_errors and leaves the claim unacknowledged: the lease re-queues it.
using DeliverFunction = std::function<void(const DelayedPush& push)>;
// The same for a delivery that completes later (e.g. a publish through a
// remote broker): call `done(true)` once delivered, and the claim is
// acknowledged then; `done(false)` (or never) leaves it to the lease, which
// re-queues it. `done` may be called from inside the call or later, on the
// loop thread, at most once; after stop() it does nothing.
using DeliveredCallback = std::function<void(bool delivered)>;
using AsyncDeliverFunction = std::function<void(const DelayedPush& push, DeliveredCallback done)>;
// The push as stored (id and due filled in), or the error.
using ScheduleCallback = std::function<void(std::error_code error, const DelayedPush& push)>;
// true: removed before anyone claimed it; false: unknown, already claimed or delivered.
using CancelCallback = std::function<void(std::error_code error, bool cancelled)>;

class DelayedQueue {
 public:
  // Validates `options` (std::invalid_argument); `deliver` is required;
  // with the client's wait_replicas set, lease must be at least twice its
  // wait_timeout (a claim waits for WAIT before the delivery). Starts
  // nothing.
  DelayedQueue(LoopWheel& wheel, redis::Client& client, DelayedQueueOptions options,
               DeliverFunction deliver);
  DelayedQueue(LoopWheel& wheel, redis::Client& client, DelayedQueueOptions options,
               AsyncDeliverFunction deliver);
  ~DelayedQueue();
  DelayedQueue(const DelayedQueue&) = delete;
  DelayedQueue& operator=(const DelayedQueue&) = delete;

  // Loads now (overdue pushes fire at once), then every load_interval;
  // starts the reaper. The Client should be started too. No-op if started.
  void start();
  // Forgets what was loaded (the pushes stay in Redis), stops loading and
  // reaping; callbacks of pending commands do nothing. start() may follow.
  void stop();
  bool started() const noexcept { return started_; }

  // Now by the wall clock, to the microsecond, and later than every time
  // this queue returned before: schedule(..., accept_time() + delay, ...)
  // gives pushes accepted one after another with one delay increasing due
  // times, so they are delivered in the order they were accepted ("Order").
  WallTime accept_time() noexcept;

  // Stores a push due at `due` (in the past: delivered at once; kept to the
  // microsecond, rounded up). See "Outcomes". Errors at once:
  // std::errc::invalid_argument (empty channel), the Client's refusals. In
  // the callback also heartwheel::errc::limit_reached: the owner has
  // max_pending_per_owner pushes pending (nothing stored; counted as
  // schedule_capped).
  std::error_code schedule(std::string channel, std::string data, WallTime due,
                           ScheduleCallback done);
  // The same, remembering `owner` with the push (see DelayedPush::owner).
  std::error_code schedule(std::string channel, std::string data, WallTime due, std::string owner,
                           ScheduleCallback done);
  // Removes a push nobody has claimed yet, whoever created it. See "Outcomes".
  std::error_code cancel(std::string_view id, CancelCallback done);
  // Removes it only if it was scheduled with this `owner` (an admin passes
  // nullopt: any owner). A push of another owner is reported like an unknown
  // one (false), so that a cancel cannot probe which ids exist.
  std::error_code cancel(std::string_view id, std::optional<std::string_view> owner,
                         CancelCallback done);

  // The counters, with the gauges filled in.
  DelayedQueueStats stats() const;
  const DelayedQueueOptions& options() const noexcept { return options_; }
  // Pushes this queue holds now (loaded, not yet claimed).
  std::size_t held() const noexcept { return held_.size(); }

 private:
  struct Held;
  // The order of held pushes: due time, then id (the same on every node).
  struct Earlier {
    bool operator()(const Held* a, const Held* b) const noexcept;
  };
  // A claim sent, in the order sent: delivered once it and every claim
  // before it have their replies.
  struct Claim {
    enum class State : std::uint8_t { pending, won, done };
    State state = State::pending;
    DelayedPush push;  // won: what to deliver
  };
  struct Periodic : TimerEntry {
    explicit Periodic(Callback cb) : TimerEntry(cb) {}
    DelayedQueue* owner = nullptr;
  };
  struct Keys {
    std::string due, data, claims;
    std::string owners;  // pending per owner: shared by every partition but on a cluster
  };
  // One partition: its keys and how far its window is loaded.
  struct Partition {
    Keys keys;
    // Everything due up to here has been loaded (microseconds since the
    // epoch, as the scores say); INT64_MIN: nothing.
    std::int64_t loaded_until_us;
  };

  std::int64_t now_us() const;
  TimePoint wheel_time(std::int64_t due_us) const noexcept;
  // Holds a push (due in microseconds since the epoch) unless it is held
  // already: into the ordered index, the front timer re-armed if it is first.
  void hold(std::string_view id, std::int64_t due_us);
  Partition& partition_of(std::string_view id);
  void release(Held& held) noexcept;
  // The front timer at the earliest push waiting (cancelled if none).
  void arm_front() noexcept;
  void claim_due();
  void claim(Held& held);
  void retry_later(Held& held) noexcept;
  void on_claimed(std::uint64_t seq, const std::string& id, std::error_code ec, redis::Reply reply);
  // Delivers the claims at the front that have their replies, in order.
  void deliver_in_order();
  void deliver(const DelayedPush& push);
  void acknowledge(const std::string& id);
  void load();
  void load_range(Partition& p, bool overdue, std::string from, std::int64_t to_ms);
  void on_loaded(Partition& p, bool overdue, std::int64_t to_ms, std::error_code ec,
                 const redis::Reply& reply);
  void finish_load();
  void reap();
  static void on_load_timer(TimerEntry& e);
  static void on_reap_timer(TimerEntry& e);
  static void on_front_timer(TimerEntry& e);
  static void on_retry_due(TimerEntry& e);
  // A callback that does nothing once this queue is stopped or gone.
  redis::Callback guarded(redis::Callback f) const;

  LoopWheel& wheel_;
  redis::Client& client_;
  DelayedQueueOptions options_;
  AsyncDeliverFunction deliver_;
  redis::Partitions tags_;
  std::vector<Partition> partitions_;
  // max_pending_per_owner as each partition's script checks it (see "Pending
  // per owner"): the whole cap, or a cluster partition's share.
  std::size_t owner_cap_ = 0;
  std::shared_ptr<int> life_;  // callbacks hold a weak_ptr: expired = stopped
  bool started_ = false;
  std::unordered_map<std::string_view, std::unique_ptr<Held>> held_;
  std::set<Held*, Earlier> waiting_;  // held, neither claiming nor waiting to retry
  std::deque<Claim> claims_;          // sent, not yet delivered or dropped
  std::uint64_t claims_base_ = 0;     // the sequence number of claims_.front()
  std::int64_t last_accept_us_ = 0;   // accept_time()'s last answer
  int loads_pending_ = 0;
  bool load_failed_ = false;
  bool load_more_ = false;  // a full page: load again at once
  std::size_t reaping_ = 0;  // reap scripts in flight
  Periodic load_timer_;
  Periodic reap_timer_;
  Periodic front_timer_;  // at the earliest push waiting
  DelayedQueueStats stats_;
};

}  // namespace heartwheel::push
