// heartwheel/loop_wheel.h - binds one TimingWheel to one libuv loop.
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
// Time comes from uv_now(), the loop's cached millisecond clock, so scheduling
// on the I/O path costs no system call. The tick should therefore be >= 1 ms.
//
// Threads: loop thread only. Lifetime: destroy the LoopWheel on the loop thread
// before the loop is closed; its handles finish closing on the next uv_run().
#pragma once

#include <cstddef>
#include <optional>

#include <uv.h>

#include <heartwheel/time.h>
#include <heartwheel/timer_service.h>
#include <heartwheel/timing_wheel.h>

namespace heartwheel {

class LoopWheel final : public TimerService {
 public:
  struct Options {
    Duration tick = std::chrono::milliseconds(10);
    std::size_t max_fired_per_iteration = 20000;
  };

  // Throws std::invalid_argument for a tick under 1 ms or a zero budget, and
  // std::system_error if libuv refuses a handle.
  explicit LoopWheel(uv_loop_t* loop) : LoopWheel(loop, Options{}) {}
  LoopWheel(uv_loop_t* loop, Options options);
  ~LoopWheel();

  LoopWheel(const LoopWheel&) = delete;
  LoopWheel& operator=(const LoopWheel&) = delete;

  // The loop's current time (uv_now), as a TimePoint.
  TimePoint now() const noexcept override { return from_uv_millis(uv_now(loop_)); }

  // Arm or move `entry` to fire `delay` from now() / at `deadline`. O(1).
  void schedule(TimerEntry& entry, Duration delay) noexcept {
    schedule_at(entry, now() + std::min(delay, wheel_.max_delay()));
  }
  void schedule_at(TimerEntry& entry, TimePoint deadline) noexcept override {
    wheel_.schedule_at(entry, deadline);
    if (!timer_armed_) wake_at(deadline);
  }
  bool cancel(TimerEntry& entry) noexcept override { return wheel_.cancel(entry); }

  // Runs due entries now (as the check phase would). For tests and for
  // callers that just advanced the loop time themselves.
  std::size_t run_due();

  TimingWheel& wheel() noexcept { return wheel_; }
  const TimingWheel& wheel() const noexcept override { return wheel_; }
  uv_loop_t* loop() const noexcept { return loop_; }
  const Options& options() const noexcept { return options_; }
  // Loop iterations whose check phase ran out of budget with entries left.
  std::uint64_t budget_exhausted() const noexcept { return budget_exhausted_; }

 private:
  struct Handles;  // heap-allocated: libuv needs them until their close callbacks
  static void on_prepare(uv_prepare_t* h);
  static void on_check(uv_check_t* h);
  static void on_timer(uv_timer_t* h);
  void rearm();
  void wake_at(TimePoint deadline);

  uv_loop_t* loop_;
  Options options_;
  TimingWheel wheel_;
  Handles* handles_;
  bool timer_armed_ = false;
  std::uint64_t armed_for_ms_ = 0;  // uv_now() value the timer is armed for
  std::uint64_t budget_exhausted_ = 0;
};

}  // namespace heartwheel
