// heartwheel/timer/loop_wheel.h - binds one TimingWheel to one libuv loop.
//
// The driver owns three libuv handles: a uv_timer_t that wakes the loop when
// the wheel's next slot is due, and a prepare/check pair.
//   - prepare (before the loop polls): arms the timer for next_deadline(), or
//     stops it when the wheel is empty, so an idle loop whose deadlines are far
//     away does not wake at all. Re-arming happens once per loop iteration, not
//     once per schedule() call.
//   - check (after the loop polled I/O): runs the due entries.
// Expiring in the check phase, after I/O, is deliberate: libuv runs timers
// BEFORE polling, so a loop that was stalled (slow callback, paused process)
// would otherwise expire idle entries of peers whose data is already waiting
// in the socket. Here the data is read (and activity recorded) first.
//
// Mass expiry is bounded: at most Options::max_fired_per_iteration callbacks
// run per loop iteration; the rest run in the following iterations, with I/O
// polled (non-blocking) in between.
//
// Time. The wheel reads a LoopClock (loop_clock.h): now() is max(uv_now(),
// CLOCK_MONOTONIC), libuv's cached loop time unless the loop has
// run on since it was cached (a long turn, a stall). Activity stamps and relative timeouts use it,
// so they are never older than what they stamp. Due entries are judged at the
// time the loop's poll returned (uv_now() in the check phase), see "Stalls".
// The tick should be >= 1 ms.
//
// Stalls (a slow callback, a page-fault storm, SIGSTOP, a VM or container
// freeze). Whatever stalls the loop and wherever in an iteration it happens:
//   - bytes read after the stall are stamped with the time they were read,
//     not the cached time from before the stall (now() above);
//   - entries expire at the time the loop's poll last returned, never later,
//     so bytes that arrived during a stall in this iteration's callbacks are
//     read by the next poll before anything is judged against a later time;
//   - a poll that returned later than the wake-up armed for it (the process
//     was frozen in epoll_wait) may not have collected the events that
//     arrived meanwhile (libuv returns on EINTR once its timeout ran out):
//     expiry is then deferred to the next iteration, whose poll does not
//     block (the due entries arm the timer for now) and reads those bytes
//     first. At most kMaxSkips iterations in a row are deferred.
// No entry therefore expires because of time the loop itself lost.
// Every iteration measures the loop's lag (time spent in its callbacks,
// before and after the poll, plus any poll overrun) into a histogram; a lag of
// stall_threshold or more counts as a stall (count, total and longest in
// LoopStats).
//
// Threads: loop thread only. Lifetime: destroy the LoopWheel on the loop thread
// before the loop is closed; its handles finish closing on the next uv_run().
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/timer/loop_clock.h>
#include <heartwheel/timer/timer_service.h>
#include <heartwheel/timer/timing_wheel.h>
#include <uv.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace heartwheel {

class LoopWheel final : public TimerService {
 public:
  struct Options {
    Duration tick = std::chrono::milliseconds(10);
    std::size_t max_fired_per_iteration = 20000;
    // A lag at least this long counts as a stall in LoopStats (> 0).
    Duration stall_threshold = std::chrono::milliseconds(250);
  };

  // Upper bounds of the lag histogram's buckets: 1 ms, 2 ms, 4 ms, ... 16.4 s,
  // then +Inf (kLagBuckets - 1 finite bounds).
  static constexpr std::size_t kLagBuckets = 16;
  static constexpr Duration lag_bucket_bound(std::size_t i) noexcept {
    return std::chrono::milliseconds(std::int64_t{1} << i);
  }

  // What the loop measured about itself.
  struct LoopStats {
    std::uint64_t iterations = 0;         // check phases run
    std::uint64_t budget_exhausted = 0;   // ... that hit max_fired_per_iteration
    std::uint64_t stalls = 0;             // ... whose lag was >= stall_threshold
    std::uint64_t expiries_deferred = 0;  // ... whose expiry waited for one more poll
    Duration stall_total{0};
    Duration stall_max{0};
    // Lag per iteration: bucket i counts lags <= lag_bucket_bound(i) (and
    // above the previous bound); the last bucket is +Inf. Not cumulative.
    std::array<std::uint64_t, kLagBuckets> lag_buckets{};
    Duration lag_total{0};

    // The counters' table (heartwheel/common/stat_fields.h); the durations
    // and the lag buckets are written by hand.
    static StatTable<LoopStats> fields() noexcept;
    // Sums, except stall_max: the larger.
    void merge(const LoopStats& other) noexcept;
  };

  // Throws std::invalid_argument for a tick under 1 ms, a zero budget or a
  // stall threshold <= 0, and std::system_error if libuv refuses a handle.
  explicit LoopWheel(uv_loop_t* loop) : LoopWheel(loop, Options{}) {}
  LoopWheel(uv_loop_t* loop, Options options);
  ~LoopWheel();

  LoopWheel(const LoopWheel&) = delete;
  LoopWheel& operator=(const LoopWheel&) = delete;

  // The current time: the loop's cached time, or later if the loop stalled
  // since it was cached (see "Time" above). A direct call, as the clock's
  // type is final; TimerService::now() reads the same clock.
  TimePoint now() const noexcept { return clock_.now(); }
  const LoopClock& clock() const noexcept { return clock_; }

  // Arm or move `entry` to fire `delay` from now() / at `deadline`. O(1).
  void schedule(TimerEntry& entry, Duration delay) noexcept {
    schedule_at(entry, now() + std::min(delay, wheel_.max_delay()));
  }
  void schedule_at(TimerEntry& entry, TimePoint deadline) noexcept override {
    wheel_.schedule_at(entry, deadline);
    if (!timer_armed_) wake_at(deadline);
  }
  bool cancel(TimerEntry& entry) noexcept override { return wheel_.cancel(entry); }

  // Runs the entries due at the loop's cached time (as the check phase
  // would). For tests and for callers that just advanced the loop time
  // themselves.
  std::size_t run_due();

  TimingWheel& wheel() noexcept { return wheel_; }
  const TimingWheel& wheel() const noexcept override { return wheel_; }
  uv_loop_t* loop() const noexcept { return loop_; }
  const Options& options() const noexcept { return options_; }
  // Loop iterations whose check phase ran out of budget with entries left.
  std::uint64_t budget_exhausted() const noexcept { return stats_.budget_exhausted; }
  const LoopStats& loop_stats() const noexcept { return stats_; }

 private:
  struct Handles;  // heap-allocated: libuv needs them until their close callbacks
  static void on_prepare(uv_prepare_t* h);
  static void on_check(uv_check_t* h);
  static void on_timer(uv_timer_t* h);
  void rearm();
  void wake_at(TimePoint deadline);
  // Measures this iteration's lag; true when expiry must wait for one more
  // poll (see "Stalls").
  bool check_for_stall() noexcept;
  static constexpr std::uint64_t kUnbounded = UINT64_MAX;
  static constexpr unsigned kMaxSkips = 2;

  uv_loop_t* loop_;
  LoopClock clock_;
  Options options_;
  TimingWheel wheel_;
  Handles* handles_;
  bool timer_armed_ = false;
  std::uint64_t armed_for_ms_ = 0;             // uv_now() value the timer is armed for
  std::uint64_t poll_started_ms_ = 0;          // uv_now() in the last prepare
  std::uint64_t poll_budget_ms_ = kUnbounded;  // how long that poll could block for us
  Duration before_poll_{0};                    // this iteration's callbacks before the poll
  unsigned skipped_in_row_ = 0;
  LoopStats stats_;
};

}  // namespace heartwheel
