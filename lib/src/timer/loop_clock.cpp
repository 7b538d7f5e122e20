// LoopClock: libuv's cached loop time, caught up with the coarse monotonic
// clock after a stall (see heartwheel/timer/loop_clock.h).
#include <heartwheel/timer/loop_clock.h>
#include <time.h>

#include <algorithm>
#include <stdexcept>

namespace heartwheel {

TimePoint LoopClock::now() const noexcept {
  const TimePoint cached = loop_time();
  timespec ts;
  if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return cached;
  const TimePoint coarse{std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)};
  return std::max(cached, coarse);
}

std::shared_ptr<TimerClock::Sleeper> LoopClock::make_sleeper() {
  throw std::logic_error(
      "LoopClock: no thread sleeps on a loop's clock (it is read on the loop's thread, and the "
      "loop sleeps in its poll); give a timer thread a SteadyTimerClock");
}

}  // namespace heartwheel
