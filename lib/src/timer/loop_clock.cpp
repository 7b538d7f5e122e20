// LoopClock: libuv's cached loop time, caught up with the monotonic clock
// when the loop has run on since it was cached (see heartwheel/timer/loop_clock.h).
#include <heartwheel/timer/loop_clock.h>
#include <time.h>

#include <algorithm>
#include <stdexcept>

namespace heartwheel {

TimePoint LoopClock::now() const noexcept {
  const TimePoint cached = loop_time();
  // The precise clock, not CLOCK_MONOTONIC_COARSE: the coarse one lags real
  // time by up to a jiffy (4 ms at HZ=250), so a message sent and read late
  // in a long turn was stamped up to that much before it was sent, and its
  // idle close came that much early (tests/integration/stall_test.cpp). A
  // vDSO read as the coarse one, dearer per call (docs/BENCHMARKS.md has the cost).
  timespec ts;
  if (::clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return cached;
  const TimePoint precise{std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)};
  return std::max(cached, precise);
}

std::shared_ptr<TimerClock::Sleeper> LoopClock::make_sleeper() {
  throw std::logic_error(
      "LoopClock: no thread sleeps on a loop's clock (it is read on the loop's thread, and the "
      "loop sleeps in its poll); give a timer thread a SteadyTimerClock");
}

}  // namespace heartwheel
