// heartwheel/virtual_clock.h - hand-driven time for tests.
//
// Advance time by hand instead of sleeping, for the project's own tests and for
// users testing their handlers. run_for() walks a wheel through every deadline
// on the way, so each callback sees now() equal to (or one tick after) its own
// deadline, as it would under a real driver with zero latency.
// ManualTimerService bundles a wheel with a VirtualClock behind the
// TimerService interface, so connection and HTTP code runs unchanged in tests.
// Threads: single-threaded, like the wheel it drives.
#pragma once

#include <heartwheel/time.h>
#include <heartwheel/timer_service.h>
#include <heartwheel/timing_wheel.h>

namespace heartwheel {

class VirtualClock {
 public:
  explicit VirtualClock(TimePoint start = TimePoint{}) noexcept : now_(start) {}

  TimePoint now() const noexcept { return now_; }

  // Moves the clock forward by d (d >= 0) without touching any wheel.
  void advance(Duration d) noexcept { now_ += d; }

  // Moves the clock forward by d, running `wheel` at each next_deadline() on
  // the way and finally at the end time. Returns the callbacks run.
  std::size_t run_for(TimingWheel& wheel, Duration d) {
    const TimePoint end = now_ + d;
    std::size_t fired = 0;
    for (auto next = wheel.next_deadline(); next && *next <= end; next = wheel.next_deadline()) {
      if (*next > now_) now_ = *next;
      const std::size_t n = wheel.advance(now_);
      fired += n;
      // Nothing ran and nothing changed: the remaining work is due later.
      if (n == 0 && wheel.next_deadline() == next && *next <= now_) break;
    }
    now_ = end;
    return fired + wheel.advance(now_);
  }

 private:
  TimePoint now_;
};

class ManualTimerService final : public TimerService {
 public:
  explicit ManualTimerService(Duration tick = std::chrono::milliseconds(1),
                              TimePoint start = TimePoint{})
      : clock_(start), wheel_(tick, start) {}

  TimePoint now() const noexcept override { return clock_.now(); }
  void schedule_at(TimerEntry& entry, TimePoint deadline) noexcept override {
    wheel_.schedule_at(entry, deadline);
  }
  bool cancel(TimerEntry& entry) noexcept override { return wheel_.cancel(entry); }
  const TimingWheel& wheel() const noexcept override { return wheel_; }
  TimingWheel& wheel() noexcept { return wheel_; }

  // Advances time by d, firing everything due on the way, in deadline order.
  std::size_t run_for(Duration d) { return clock_.run_for(wheel_, d); }

 private:
  VirtualClock clock_;
  TimingWheel wheel_;
};

}  // namespace heartwheel
