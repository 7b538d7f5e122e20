// heartwheel/virtual_clock.h - hand-driven time for tests.
//
// Advance time by hand instead of sleeping, for the project's own tests and for
// users testing their handlers. run_for() walks a wheel through every deadline
// on the way, so each callback sees now() equal to (or one tick after) its own
// deadline, as it would under a real driver with zero latency.
// Threads: single-threaded, like the wheel it drives.
#pragma once

#include <heartwheel/time.h>
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

}  // namespace heartwheel
