// heartwheel/timer/timer_clock.h - the clock: the one way heartwheel reads time.
//
// What it is
//   Everything in heartwheel that needs the time reads it through a
//   TimerClock: the loop's TimerService (timer_service.h: LoopWheel in
//   production, ManualTimerService in tests) and HashedWheelTimer's worker
//   thread. TimingWheel itself never reads a clock: its driver passes `now`.
//   A clock does two things:
//   - now(): the current time, monotonic;
//   - make_sleeper(): how one thread sleeps until a time on this clock, and
//     how other threads wake it (only timers with a thread of their own
//     sleep; an event loop sleeps in its poll).
//   Three clocks:
//     clock             now()                                  sleeping           where
//     ----------------  -------------------------------------  -----------------  ---------------
//     SteadyTimerClock  std::chrono::steady_clock              a timed cv wait    below; the default
//     LoopClock         libuv's cached loop time, or the       no (the loop       loop_clock.h; LoopWheel's
//                       monotonic clock once it is stale       polls)
//     VirtualClock      moves only when a test advances it     until advanced     virtual_clock.h; tests
//   So a test swaps real time for hand-advanced time in one place: a
//   ManualTimerService (a TimerService on a VirtualClock) for loop code, a
//   VirtualClock in HashedWheelTimer::Options::clock for the threaded timer.
//
// Ownership
//   A HashedWheelTimer holds its clock by shared_ptr, so the clock outlives
//   every thread that sleeps on it. A TimerService holds its clock by
//   reference, the clock being a member of the service (LoopWheel,
//   ManualTimerService). A Sleeper is made by the clock for one thread; its
//   owner keeps it (shared_ptr) until that thread is gone.
//
// Threads
//   now(): any thread, unless the clock says otherwise (LoopClock: its
//   loop's thread). make_sleeper(): any thread. A Sleeper: wake() from any
//   thread; begin(), sleep_until() and end() from the one thread that sleeps.
//
// Cost
//   now() is one virtual call (none where the caller holds the final type,
//   as LoopWheel::now() does): SteadyTimerClock and LoopClock read a vDSO
//   clock, VirtualClock an atomic.
//
// Writing a clock
//   now() must be monotonic. sleep_until(d) must not return before wake() was
//   called (since its last return) or now() >= d; it may return late. A
//   clock no thread can sleep on throws std::logic_error from make_sleeper().
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
  // The current time, monotonic. Any thread (unless the clock says otherwise).
  virtual TimePoint now() const noexcept = 0;
  // A sleeper for one thread, made before that thread starts.
  // Throws std::bad_alloc, or std::logic_error if no thread can sleep on
  // this clock.
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
