// heartwheel/timer/timing_wheel.h - the single-threaded hierarchical timing wheel.
//
// What it is
//   A loop-affine timer store for very many timeouts that are mostly cancelled
//   or pushed back before they fire (idle timeouts, request deadlines,
//   heartbeats). Entries are intrusive (TimerEntry lives in its owner), so no
//   operation allocates. Time is a parameter: the wheel never reads a clock;
//   the driver (LoopWheel for libuv, VirtualClock in tests) passes `now`.
//
// Shape (kLevels levels of kSlots = 64 slots; tick = the constructor's tick)
//
//   level | slot width    | range of the level | at tick = 1 ms
//   ------+---------------+--------------------+----------------
//     0   | 1 tick        | 64 ticks           | 64 ms
//     1   | 64 ticks      | 2^12 ticks         | 4.1 s
//     2   | 2^12 ticks    | 2^18 ticks         | 4.4 min
//     3   | 2^18 ticks    | 2^24 ticks         | 4.7 h
//     4   | 2^24 ticks    | 2^30 ticks         | 12.4 days
//     5   | 2^30 ticks    | 2^36 ticks         | 2.2 years
//     6   | 2^36 ticks    | 2^42 ticks         | 139 years
//     7   | 2^42 ticks    | 2^48 ticks         | 8,900 years
//
//   (tests/unit/timing_wheel_test.cpp recomputes this table from the constants.)
//   An entry goes to the lowest level whose slot can tell its deadline apart
//   from the current time (as in tokio and the Linux kernel). When time
//   reaches a slot of level > 0, its entries cascade to lower levels using
//   their exact deadline, so granularity never coarsens: every entry fires on
//   its own tick. An entry is touched at most once per level on its way down,
//   so its lifetime cost is bounded (at most kLevels moves) whatever its delay.
//   Delays longer than max_delay() are clamped to it.
//
// Precision contract
//   An entry never fires before its deadline: deadlines are rounded UP to a
//   tick. It fires during the first advance(now) with now >= that rounded
//   deadline, so at most one tick (plus the driver's latency) late.
//   A deadline already in the past fires at the next advance().
//
// Cost
//   schedule/cancel/reschedule: O(1), no allocation. A reschedule to a LATER
//   deadline (the "refresh on I/O" case) only stores it: the entry stays in
//   its slot and is re-linked when that slot comes due, once per timeout
//   period at most. One that moves earlier but stays in its slot also only
//   stores; other reschedules unlink and relink.
//   The wheel keeps the last deadline it was given with its tick and slot
//   (re-aimed when time moves): a loop arms its timeouts from one cached
//   `now`, so runs of equal deadlines are the common case (a burst of
//   accepts, the requests of a pipeline, refreshes on I/O in one turn), and
//   they skip the division and the level search. A new entry at that
//   deadline is linked inline (schedule_at in this header): a link, two counts
//   and the occupancy bit, as cheap as a binary heap's append (measured in
//   docs/BENCHMARKS.md, "schedule (seq)").
//   next_deadline(): O(kLevels) bit operations on occupancy bitmaps; empty
//   slots are never visited one by one.
//   advance(): O(levels + entries that cascade or fire), plus O(kWays) per
//   slot that comes due.
//
// Slots are split into kWays = 8 lists ("ways")
//   With very many entries, expiry is bound by memory latency: walking a
//   list is a chain of dependent loads, one cache miss at a time, and an
//   entry cascading from level 2 is walked three times on its way to firing.
//   So each slot is 8 lists, and process() walks them interleaved (with a
//   prefetch of each way's next node): 8 misses are in flight instead of one.
//   An entry's way is a hash of its 4 KiB page, so entries that share a page
//   stay neighbours in one list and cancel/unlink touches the same lines as
//   with a single list. What it buys at 1M entries (mass expiry several
//   times cheaper per fired entry; cancel, refresh and schedule unchanged)
//   is measured in docs/BENCHMARKS.md (timer bench). Costs:
//   64 KiB of slot heads per wheel (8 KiB before); an unlink that empties
//   its way reads the slot's 8 heads (two cache lines) to know whether the
//   occupancy bit goes; and entries due on the same tick run in no
//   particular order (way by way).
//   A wheel built with SameTickOrder::fifo keeps one list per slot instead:
//   entries due on the same tick run in the order they were scheduled
//   (exactly: the order they reached their slot; an entry postponed in place
//   reaches its new slot when its old one comes due), and expiry walks one
//   list at a time as before the ways. HashedWheelTimer uses it (Netty runs
//   a bucket in order); LoopWheel and the benches use the default.
//   Even fifo is the order entries were SCHEDULED, not their deadlines'
//   order within the tick. So where users see the order of what fires
//   (issue 34), the wheel must not decide it: push::DelayedQueue keeps its
//   pushes in an index ordered by due time behind one entry; redis::Client
//   fails timed-out commands in the order sent (one entry per connection);
//   ExpiringMap's expiries and rpc::CallTable's timeouts due on one tick
//   reach their listener in no particular order (said in their headers).
//
// Threads
//   Loop thread only: one wheel belongs to one thread. Distinct wheels: safe.
//   For cross-thread use see HashedWheelTimer.
//
// Re-entrancy
//   Entries due in one advance() are first detached into a ready list, then
//   run one by one. A callback may schedule, reschedule or cancel any entry
//   (also one due in the same advance, which then does not run), or destroy
//   its own owner. Calling advance() from a callback is not allowed (asserted).
//   Entries a callback schedules at or before `now` run at the next advance(),
//   so an entry that re-arms itself with zero delay cannot spin the wheel.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <heartwheel/common/stat_fields.h>
#include <heartwheel/common/time.h>
#include <heartwheel/timer/tick_scale.h>
#include <heartwheel/timer/timer_entry.h>

namespace heartwheel {

// The order in which entries due on the same tick run; see "Slots are split
// into ways" above.
enum class SameTickOrder : std::uint8_t {
  unspecified,  // the default: kWays lists per slot, fastest mass expiry
  fifo,         // the order they were scheduled: one list per slot
};

// Counters the wheel keeps as it works. Lateness is measured against each
// entry's rounded-up deadline, at the `now` passed to advance().
struct WheelStats {
  std::uint64_t scheduled = 0;   // schedule/reschedule calls
  std::uint64_t relinked = 0;    // ... of which moved the entry to another slot
  std::uint64_t cancelled = 0;   // cancel() calls that disarmed an entry
  std::uint64_t fired = 0;       // callbacks run
  std::uint64_t cascaded = 0;    // re-links when a slot came due: cascades down a
                                 // level, or entries postponed in place
  Duration max_lateness{0};      // worst lateness seen
  Duration total_lateness{0};    // sum, for the mean: total_lateness / fired

  // The counters' table (heartwheel/common/stat_fields.h): JSON keys as
  // above, Prometheus families; the two durations are written by hand.
  static StatTable<WheelStats> fields() noexcept;
  // Adds `other`'s counters and lateness sum; keeps the larger maximum.
  void merge(const WheelStats& other) noexcept;
};

class TimingWheel {
 public:
  static constexpr unsigned kSlotBits = 6;
  static constexpr unsigned kSlots = 1u << kSlotBits;  // per level
  static constexpr unsigned kLevels = 8;
  static constexpr std::uint64_t kMaxTicks = std::uint64_t{1} << (kSlotBits * kLevels);
  static constexpr unsigned kWayBits = 3;
  static constexpr unsigned kWays = 1u << kWayBits;  // lists per slot (see Cost)

  // tick: the wheel's resolution, > 0. origin: the time the wheel starts at;
  // deadlines before it are "in the past". order: see SameTickOrder.
  // Throws std::invalid_argument if tick <= 0.
  explicit TimingWheel(Duration tick = std::chrono::milliseconds(1), TimePoint origin = TimePoint{},
                       SameTickOrder order = SameTickOrder::unspecified);
  ~TimingWheel();  // entries still armed are unlinked (their owners keep them)

  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;

  // Arms `entry` to fire at `deadline`; if already armed in this wheel, moves
  // it. O(1), no allocation. Precondition: entry is not armed in another wheel.
  void schedule_at(TimerEntry& entry, TimePoint deadline) noexcept {
    // Inline, the two common cases at the same deadline as the last call
    // (see LastDeadline): a new entry is a link and two counts; an entry
    // pushed back (refresh on I/O) stays in its slot, as in schedule_slow.
    if (deadline == last_.deadline) {
      if (!entry.armed()) {
        ++stats_.scheduled;
        ++size_;
        entry.when_ = last_.when;
        link_last(entry);
        return;
      }
      if (postpones(entry.when_)) {
        ++stats_.scheduled;
        entry.when_ = last_.when;
        return;
      }
    }
    schedule_slow(entry, deadline);
  }

  // Same, relative to now(): deadline = now() + delay.
  void schedule(TimerEntry& entry, Duration delay) noexcept {
    schedule_at(entry, now_ + std::min(delay, max_delay()));
  }

  // Disarms `entry`. Returns true if it was armed (so it will not fire),
  // false if it was not armed. O(1).
  bool cancel(TimerEntry& entry) noexcept;

  // Moves time forward to `now` (earlier values are ignored: time never goes
  // back) and runs the callbacks of entries that are due, at most
  // `max_fired` of them; the rest stay ready and run at the next call.
  // Returns the number of callbacks run.
  // Precondition: not called from inside one of this wheel's callbacks.
  std::size_t advance(TimePoint now, std::size_t max_fired = SIZE_MAX);

  // When the driver must call advance() next: the earliest time something may
  // be due (a deadline, or a cascade point of a higher level). Equal to or
  // before now() when entries are ready. nullopt when the wheel is empty.
  std::optional<TimePoint> next_deadline() const noexcept;

  // The rounded-up deadline of an armed entry, or of an entry whose callback
  // is running (the deadline it fired for). Precondition: one of the two.
  TimePoint deadline_of(const TimerEntry& entry) const noexcept;

  TimePoint now() const noexcept { return now_; }
  TimePoint origin() const noexcept { return origin_; }
  Duration tick() const noexcept { return tick_; }
  // The grid of ticks deadlines are rounded to (tick_scale.h).
  TickScale scale() const noexcept { return TickScale{origin_, tick_}; }
  SameTickOrder same_tick_order() const noexcept { return order_; }
  // The longest delay the wheel holds; longer ones are clamped to it. It is
  // (2^48 - 1) ticks, or about 146 years, whichever is shorter.
  Duration max_delay() const noexcept { return tick_ * static_cast<Duration::rep>(max_ticks_); }
  std::size_t size() const noexcept { return size_; }  // armed entries
  bool empty() const noexcept { return size_ == 0; }
  std::size_t ready() const noexcept { return ready_count_; }  // due, not yet run
  const WheelStats& stats() const noexcept { return stats_; }

  // Checks every invariant (links, occupancy bits, levels, counts) and throws
  // std::logic_error naming the first one broken. O(entries); for tests.
  void validate() const;
  // A human-readable picture of the occupied slots, for failure messages.
  std::string dump() const;

 private:
  struct Expiration {
    unsigned level;
    unsigned slot;
    std::uint64_t deadline;  // tick at which the slot is due
  };

  std::uint64_t ticks_ceil(TimePoint t) const noexcept;
  std::uint64_t ticks_floor(TimePoint t) const noexcept;
  static unsigned level_for(std::uint64_t elapsed, std::uint64_t when) noexcept;
  static unsigned slot_for(std::uint64_t when, unsigned level) noexcept {
    return static_cast<unsigned>(when >> (level * kSlotBits)) & (kSlots - 1);
  }
  // A slot is kWays list heads (128 bytes, two cache lines), an entry's way
  // picked by way_for(); process() walks them interleaved.
  struct alignas(64) Slot {
    std::array<detail::ListNode, kWays> ways;
  };
  unsigned way_for(const TimerEntry& entry) const noexcept {
    // (fifo: way_mask_ is 0, every entry in way 0; a mask, not a branch.)
    // A Fibonacci hash of the entry's 4 KiB page. Entries of one page stay
    // neighbours in one list, so unlinking one touches lines near it (as
    // with a single list, when owners are allocated in order), while a
    // slot's ways hold disjoint sets of pages: kWays independent streams for
    // process(). Round robin would balance exactly but make every neighbour
    // a far line.
    const std::uint64_t page = reinterpret_cast<std::uintptr_t>(&entry) >> 12;
    return static_cast<unsigned>(((page * 0x9E3779B97F4A7C15ull) >> (64 - kWayBits)) & way_mask_);
  }
  Slot& slot_at(unsigned level, unsigned slot) noexcept { return slots_[level * kSlots + slot]; }
  const Slot& slot_at(unsigned level, unsigned slot) const noexcept {
    return slots_[level * kSlots + slot];
  }
  void link(TimerEntry& entry) noexcept;                // into its slot
  // Into the slot of last_ (see LastDeadline), at its way's tail.
  void link_last(TimerEntry& entry) noexcept {
    detail::ListNode& head = last_.slot->ways[way_for(entry)];
    detail::ListNode* tail = head.prev;
    // This order keeps the two stores into the entry apart (tail->next may
    // alias them): merged, GCC builds them in a vector register, which costs
    // more per call (docs/BENCHMARKS.md).
    entry.prev = tail;
    tail->next = &entry;
    entry.next = &head;
    head.prev = &entry;
    // Mostly set already: a load and a branch instead of a store (stores
    // are what this path is bound by).
    if ((*last_.occupied & last_.bit) == 0) *last_.occupied |= last_.bit;
  }
  void schedule_slow(TimerEntry& entry, TimePoint deadline) noexcept;  // the rest of schedule_at
  void unlink(TimerEntry& entry) noexcept;              // from slot or ready list
  std::optional<Expiration> next_expiration() const noexcept;
  void process(const Expiration& exp) noexcept;          // cascade or make ready

  Duration tick_;
  std::uint64_t max_ticks_;  // clamp for delays; keeps tick arithmetic in range
  SameTickOrder order_;
  std::uint64_t way_mask_;  // kWays - 1, or 0 for SameTickOrder::fifo
  TimePoint origin_;
  TimePoint now_;
  std::uint64_t elapsed_ = 0;  // ticks fully processed
  std::size_t size_ = 0;
  std::size_t ready_count_ = 0;
  bool in_advance_ = false;
  std::array<std::uint64_t, kLevels> occupied_{};  // bit s: slot s non-empty
  std::array<Slot, kLevels * kSlots> slots_;
  detail::ListNode ready_;  // due entries waiting to run, in deadline order
  WheelStats stats_;
  // The last deadline schedule_at() was given, with the tick, level and slot
  // it maps to now: a loop arms its timeouts from one cached `now`, so runs
  // of equal deadlines are the common case (a burst of accepts, the requests
  // of one pipeline, a batch of heartbeats, refreshes on I/O in one turn):
  // they skip the division and the level search. advance() re-aims it when
  // elapsed_ moves, so it is always valid.
  // Whether an armed entry due at tick `old` may move to last_.when by a
  // store alone ("postpone in place", see schedule_slow): the new deadline
  // is not earlier, neither is due now, and the entry is below the top level
  // (whose slots may wrap). A ready entry's `old` has kReadyBit, above any
  // last_.when.
  bool postpones(std::uint64_t old) const noexcept {
    return last_.postpone && old > elapsed_ && old <= last_.when &&
           ((elapsed_ ^ old) >> (kSlotBits * (kLevels - 1))) == 0;
  }
  struct LastDeadline {
    TimePoint deadline{};
    std::uint64_t ticks = 0;  // ticks_ceil(deadline), before clamping
    std::uint64_t when = 0;   // the clamped tick an entry gets, at the current elapsed_
    Slot* slot = nullptr;
    std::uint64_t* occupied = nullptr;  // the level's word in occupied_
    std::uint64_t bit = 0;              // the slot's bit in it
    bool postpone = false;              // later entries may be postponed in place to `when`
    bool operator==(const LastDeadline&) const = default;
  };
  // The mapping of `deadline` (`ticks` = ticks_ceil(deadline)) at the current elapsed_.
  LastDeadline aimed(TimePoint deadline, std::uint64_t ticks) noexcept;
  LastDeadline last_;
};

}  // namespace heartwheel
