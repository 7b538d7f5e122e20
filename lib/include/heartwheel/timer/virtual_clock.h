// heartwheel/timer/virtual_clock.h - hand-driven time for tests.
//
// A VirtualClock is a TimerClock (timer_clock.h) whose time moves only when
// the test moves it: advance time by hand instead of sleeping, for the
// project's own tests and for users testing their handlers. The same clock
// serves both kinds of timer:
//   - Loop code (anything taking a TimerService&: connections, HTTP
//     sessions, ExpiringMap): ManualTimerService (below) is a TimerService
//     on a VirtualClock. Its run_for(d) walks its wheel through every
//     deadline on the way, so each callback sees now() equal to its own
//     deadline (rounded up to the tick), as it would under a real driver
//     with zero latency. VirtualClock::run_for(wheel, d) does the same for
//     a bare TimingWheel.
//   - Timers with a thread of their own (HashedWheelTimer with
//     Options::clock set to this clock): they sleep on the clock.
//     advance(d) moves time to each wake-up time a sleeping worker asked for
//     on the way, and at each step waits until every worker has caught up:
//     it is asleep again, waiting for a later time, or it has finished. So
//     when advance() returns, every task due by the new time has run (tasks
//     handed to an executor: have been handed over), each having seen now()
//     at its own tick: the results do not depend on the machine's speed or
//     load. advance(0) only waits for the workers to catch up, e.g. after
//     new_timeout() from the test.
//
// Threads
//   now(): any thread. advance() and run_for(): the test's thread, or a task
//   on a worker sleeping on this clock (which advance() then does not wait
//   for: a thread cannot wait for itself).
//   advance() blocks until every worker goes back to sleep: a worker stuck
//   in a task that waits for the advancing thread would block it for ever,
//   so after 60 s of real time advance() throws std::runtime_error instead.
//
// Lifetime
//   The clock must outlive the threads sleeping on it. HashedWheelTimer holds
//   its clock by shared_ptr, which sees to that.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_clock.h>
#include <heartwheel/timer/timer_service.h>
#include <heartwheel/timer/timing_wheel.h>

namespace heartwheel {

class VirtualClock final : public TimerClock {
 public:
  explicit VirtualClock(TimePoint start = TimePoint{}) noexcept : now_(start) {}
  VirtualClock(const VirtualClock&) = delete;
  VirtualClock& operator=(const VirtualClock&) = delete;

  TimePoint now() const noexcept override { return now_.load(std::memory_order_acquire); }

  // Moves the clock forward by d, stepping through the wake-up times of the
  // threads sleeping on it and waiting for them at each step (see above).
  // With no sleeping threads it only moves the time.
  // Throws std::invalid_argument if d < 0 (time never goes back), and
  // std::runtime_error if a sleeping thread does not catch up within 60 s.
  void advance(Duration d);

  // Moves the clock forward by d, running `wheel` at each next_deadline() on
  // the way and finally at the end time, then lets sleeping threads catch up
  // with the end time as advance(0) does (they do not see the steps).
  // Returns the callbacks run. Throws std::invalid_argument if d < 0.
  std::size_t run_for(TimingWheel& wheel, Duration d);

  std::shared_ptr<Sleeper> make_sleeper() override;

 private:
  class VirtualSleeper;
  std::vector<std::shared_ptr<VirtualSleeper>> live_sleepers();
  void move_to(TimePoint t) noexcept;  // never backwards, also with several advancing threads

  std::atomic<TimePoint> now_;
  std::mutex sleepers_mutex_;
  std::vector<std::weak_ptr<VirtualSleeper>> sleepers_;  // guarded by sleepers_mutex_
};

// A TimerService on a VirtualClock: a wheel whose time moves only in
// run_for(). Threads: the test's thread (as any TimerService: one thread).
class ManualTimerService final : public TimerService {
 public:
  // tick: the wheel's (> 0, else std::invalid_argument); start: the clock's
  // and the wheel's initial time.
  explicit ManualTimerService(Duration tick = std::chrono::milliseconds(1),
                              TimePoint start = TimePoint{})
      : TimerService(clock_), clock_(start), wheel_(tick, start) {}

  // The clock's time (a direct call; TimerService::now() reads the same clock).
  TimePoint now() const noexcept { return clock_.now(); }
  void schedule_at(TimerEntry& entry, TimePoint deadline) noexcept override {
    wheel_.schedule_at(entry, deadline);
  }
  bool cancel(TimerEntry& entry) noexcept override { return wheel_.cancel(entry); }
  const TimingWheel& wheel() const noexcept override { return wheel_; }
  TimingWheel& wheel() noexcept { return wheel_; }
  // The clock now() reads. Moving it by hand (clock().advance()) moves the
  // time without running the wheel: due entries run at the next run_for().
  VirtualClock& clock() noexcept { return clock_; }
  const VirtualClock& clock() const noexcept { return clock_; }

  // Advances time by d, firing everything due on the way, in deadline order
  // tick by tick (entries due on one tick in the wheel's SameTickOrder: the
  // default, no particular order). Returns the callbacks run. Throws std::invalid_argument if d < 0.
  std::size_t run_for(Duration d) { return clock_.run_for(wheel_, d); }

 private:
  VirtualClock clock_;
  TimingWheel wheel_;
};

}  // namespace heartwheel
