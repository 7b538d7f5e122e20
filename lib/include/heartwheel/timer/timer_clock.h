// heartwheel/timer/timer_clock.h - the clock a timer thread reads and sleeps on.
//
// What it is
//   HashedWheelTimer's worker thread reads the time and sleeps until its next
//   deadline through a TimerClock, so tests can drive it by hand. Two clocks:
//   - SteadyTimerClock (below, the default): std::chrono::steady_clock, and a
//     condition variable's timed wait.
//   - VirtualClock (virtual_clock.h): time moves only when a test calls
//     advance(); a sleeping worker wakes when the clock reaches its wake-up
//     time, and advance() returns once every worker has caught up. Timer
//     tests then neither sleep nor depend on the machine's load.
//   Event loops do not use this: LoopWheel reads libuv's loop time, and
//   TimingWheel itself takes `now` as a parameter.
//
// Ownership
//   A timer holds its clock by shared_ptr, so the clock outlives every
//   thread that sleeps on it. A Sleeper is made by the clock for one thread;
//   its owner keeps it (shared_ptr) until that thread is gone.
//
// Threads
//   now(): any thread. make_sleeper(): any thread. A Sleeper: wake() from any
//   thread; begin(), sleep_until() and end() from the one thread that sleeps.
//
// Writing a clock
//   now() must be monotonic. sleep_until(d) must not return before wake() was
//   called (since its last return) or now() >= d; it may return late.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include <heartwheel/common/time.h>

namespace heartwheel {

class TimerClock {
 public:
  // How one thread sleeps on the clock, and how others wake it.
  class Sleeper {
   public:
    virtual ~Sleeper() = default;
    // The sleeping thread, once, before its first sleep_until(). Optional.
    virtual void begin() noexcept {}
    // Blocks until wake() was called since the last return (a wake() that
    // came first ends the next call at once), or until the clock reaches
    // `deadline` (nullopt: no deadline, only wake()).
    virtual void sleep_until(std::optional<TimePoint> deadline) = 0;
    // Any thread: ends the current sleep_until(), or the next one.
    virtual void wake() noexcept = 0;
    // The sleeping thread, once: it will not sleep again (it is finishing).
    // Also to be called, by its owner, when the thread never started.
    virtual void end() noexcept {}
  };

  virtual ~TimerClock() = default;
  // The current time, monotonic. Any thread.
  virtual TimePoint now() const noexcept = 0;
  // A sleeper for one thread, made before that thread starts.
  // Throws std::bad_alloc.
  virtual std::shared_ptr<Sleeper> make_sleeper() = 0;
};

// std::chrono::steady_clock (the clock libuv reads, see time.h). Stateless:
// one instance may serve any number of timers.
class SteadyTimerClock final : public TimerClock {
 public:
  TimePoint now() const noexcept override { return Clock::now(); }
  std::shared_ptr<Sleeper> make_sleeper() override;
};

}  // namespace heartwheel
