// heartwheel/timer/loop_clock.h - a libuv loop's time, as a TimerClock.
//
// What it is
//   The clock LoopWheel (loop_wheel.h) reads and hands to everything that
//   schedules through it. now() is max(uv_now(), CLOCK_MONOTONIC): libuv's
//   cached loop time, unless the loop has run on since it was cached (a
//   long turn, a stall), then the current time (a vDSO read, no system
//   call). Not CLOCK_MONOTONIC_COARSE: it lags real time by up to a kernel
//   jiffy (1-4 ms), and a message read late in a turn was then stamped up to
//   that much before it was sent, its idle close that much early
//   (tests/integration/stall_test.cpp). Activity stamps and relative
//   timeouts use it, so they are never older than what they stamp, while due
//   entries are judged at loop_time(), the time the loop's poll returned
//   (loop_wheel.h, "Stalls").
//   Both are CLOCK_MONOTONIC, the same time base as SteadyTimerClock.
//
// Threads: the loop's thread only (uv_now() reads the loop). No thread
//   sleeps on it: the loop sleeps in its poll, so make_sleeper() throws.
// Cost: now() is one vDSO clock read and a compare; LoopWheel holds the
//   clock as its final type, so LoopWheel::now() is a direct call.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_clock.h>
#include <uv.h>

#include <memory>

namespace heartwheel {

class LoopClock final : public TimerClock {
 public:
  // Precondition: `loop` outlives the clock.
  explicit LoopClock(uv_loop_t* loop) noexcept : loop_(loop) {}

  // The loop's cached time, or later if the loop stalled since (see above).
  TimePoint now() const noexcept override;
  // The time the loop's poll last returned: uv_now().
  TimePoint loop_time() const noexcept { return from_uv_millis(uv_now(loop_)); }
  // Always throws std::logic_error: a loop's clock is read on its thread,
  // and the loop sleeps in its poll (threads sleep on SteadyTimerClock).
  std::shared_ptr<Sleeper> make_sleeper() override;

  uv_loop_t* loop() const noexcept { return loop_; }

 private:
  uv_loop_t* loop_;
};

}  // namespace heartwheel
