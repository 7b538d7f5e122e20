// heartwheel/timer/hashed_wheel_timer.h - a thread-safe timer with its own thread,
// with the semantics of Netty's HashedWheelTimer.
//
// What it is
//   A timer for code that is not tied to one event loop: RPC call deadlines,
//   lock-lease renewal, delayed jobs. Any thread submits a task with a delay;
//   one worker thread owns a TimingWheel (the same hierarchical core the event
//   loops use) and runs each task when its deadline has passed. For
//   per-connection timeouts on a libuv loop, use LoopWheel instead: no thread
//   hop, no allocation.
//
//     heartwheel::HashedWheelTimer timer;   // 100 ms tick
//     auto t = timer.new_timeout([](heartwheel::Timeout& self) { ... }, 2s);
//     t->cancel();
//     auto never_ran = timer.stop();
//
// How it works, and what it costs
//   new_timeout() allocates the Timeout (the wheel entry, queue nodes and
//   handle in one block) and pushes it on a lock-free MPSC queue. The worker
//   moves at most kMaxTransfersPerTick submissions into the wheel per
//   wake-up, so a burst cannot delay tasks that are due; then it runs what is
//   due and sleeps until the wheel's next_deadline(). An empty timer does not
//   tick. A submission wakes a sleeping worker only if its deadline falls
//   before the planned wake-up (the worker drains the queue when it wakes
//   anyway), and every kPushesPerWake pushes so queues cannot pile up.
//   cancel() is a compare-and-swap on the timeout's state plus a push on a
//   second MPSC queue; the worker unlinks the entry at its next wake-up.
//   Per operation: O(1); new_timeout() allocates once (plus the
//   std::function's own block if the callable is large), cancel() never.
//
// Precision
//   A task never runs before its deadline (now + delay, read from the
//   timer's clock when new_timeout() is called). It runs at the first tick
//   boundary (counted from the timer's construction) at or after the
//   deadline, plus the worker's wake-up latency: at most one tick late on an
//   unloaded machine. A delay <= 0 runs at the next tick boundary. Tasks run
//   in tick order; within one tick, in the order they reached the wheel
//   (its wheel keeps SameTickOrder::fifo, see timing_wheel.h).
//
// Time, and testing without sleeping
//   The timer reads the time, and its worker sleeps, through a TimerClock
//   (timer_clock.h): Options::clock, by default the real steady clock. Give
//   it a VirtualClock (virtual_clock.h) and time moves only when the test
//   calls clock->advance(d); the worker wakes at each of its wake-up times on
//   the way, and advance() returns once it has run everything due and gone
//   back to sleep. Tasks then see clock->now() at their own tick boundary:
//     auto clock = std::make_shared<heartwheel::VirtualClock>();
//     heartwheel::HashedWheelTimer timer({.tick = 100ms, .clock = clock});
//     auto t = timer.new_timeout(task, 2s);
//     clock->advance(3s);              // the task ran, at clock->now() == 2 s
//   Tasks handed to an executor are handed over by then, not necessarily run.
//
// About ticks_per_wheel
//   Netty's wheel is one ring of ticks_per_wheel buckets; a timeout further
//   away than one revolution stays in its bucket and is visited once per
//   revolution. The core here is hierarchical (8 levels of 64 slots, see
//   timing_wheel.h): an entry is touched at most once per level whatever its
//   delay, and empty ticks cost nothing. So ticks_per_wheel is a
//   compatibility parameter: it is validated and rounded up to a power of two
//   exactly as Netty does (so ported code keeps its error behaviour) and
//   reported by ticks_per_wheel(), but it changes neither precision, nor cost,
//   nor memory. Only the tick matters.
//
// Threads
//   new_timeout(), new_periodic(), start(), stop(), set_expire_all() and
//   every getter: any thread. The Timeout handle: any thread.
//   Tasks run on the worker thread, one at a time, in tick order; with an
//   executor they are handed to it instead (the executor is called on the
//   worker thread and decides where the task runs).
//   A task runs on the worker, so it must be short: a slow task delays every
//   other task. Hand long work to an executor.
//
// Re-entrancy: what a task may do
//   - new_timeout()/new_periodic() on this timer (e.g. re-schedule itself),
//     cancel() any timeout, read any getter, set_expire_all().
//   - NOT stop() (it would join the thread it runs on): throws
//     std::logic_error. Destroying the timer from its own task is allowed but
//     drops the unprocessed timeouts (the worker finishes after the task).
//   - A task that throws is logged (common/log.h) and counted in failed_tasks();
//     the worker carries on.
//
// Lifetime
//   The destructor stops the timer (discarding what stop() would return).
//   Timeout handles stay valid after the timer is gone (cancel() then just
//   returns false or flips the state); Timeout::timer() does not.
//   Few instances, many timeouts: each timer is a thread. A warning is
//   printed once per process when more than kInstanceWarningThreshold exist.
//   The timer shares ownership of its clock (Options::clock), so the clock
//   lives as long as the timer's worker needs it; one clock may serve many
//   timers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include <heartwheel/common/time.h>
#include <heartwheel/timer/timeout.h>
#include <heartwheel/timer/timer_clock.h>

namespace heartwheel {

// Thrown by new_timeout()/new_periodic() when max_pending timeouts are already
// pending. Netty's RejectedExecutionException.
class RejectedExecution : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HashedWheelTimer {
 public:
  // Receives each task when it is due, on the worker thread, and runs it
  // wherever it likes (a pool, another loop). It must not block for long: the
  // worker waits for it. If it throws, the task is lost and the error logged.
  using Executor = std::function<void(std::function<void()>)>;

  static constexpr Duration kDefaultTick = std::chrono::milliseconds(100);
  static constexpr int kDefaultTicksPerWheel = 512;
  static constexpr int kMaxTicksPerWheel = 1 << 30;  // Netty's limit
  static constexpr std::size_t kMaxTransfersPerTick = 100'000;
  // The worker is also woken after this many submissions and cancellations
  // since its last wake-up, whatever their deadlines, so queued submissions
  // and cancelled entries cannot pile up while it sleeps (about 1 MB).
  static constexpr std::size_t kPushesPerWake = 4096;
  static constexpr int kInstanceWarningThreshold = 64;

  struct Options {
    Duration tick = kDefaultTick;                // > 0; the precision
    int ticks_per_wheel = kDefaultTicksPerWheel;  // 1 .. 2^30; see "About ticks_per_wheel"
    std::int64_t max_pending = 0;                // >= 0; 0 = unlimited
    // Every member has an initializer, so designated initializers may skip any.
    Executor executor{};                  // empty: tasks run on the worker thread
    std::shared_ptr<TimerClock> clock{};  // empty: SteadyTimerClock (real time)
  };

  // Defaults: 100 ms tick, 512 ticks per wheel, no limit, tasks on the worker.
  HashedWheelTimer();
  // Throws std::invalid_argument when tick <= 0, ticks_per_wheel is not in
  // 1 .. 2^30, or max_pending < 0; the message names the argument and value.
  explicit HashedWheelTimer(Duration tick, int ticks_per_wheel = kDefaultTicksPerWheel,
                            std::int64_t max_pending = 0, Executor executor = {});
  explicit HashedWheelTimer(Options options);
  // Stops the timer and joins the worker (see Lifetime above).
  ~HashedWheelTimer();

  HashedWheelTimer(const HashedWheelTimer&) = delete;
  HashedWheelTimer& operator=(const HashedWheelTimer&) = delete;

  // Schedules `task` to run once, `delay` from now (<= 0: at the next tick;
  // delays beyond about 73 years are clamped). Starts the worker if needed.
  // Returns the handle; dropping it does not cancel.
  // Throws std::invalid_argument if task is empty; std::logic_error once
  // stop() was called; RejectedExecution when max_pending() timeouts are
  // pending; std::system_error if the worker thread cannot be started.
  std::shared_ptr<Timeout> new_timeout(Timeout::Task task, Duration delay);

  // Schedules `task` to run `initial_delay` from now, then every `period`
  // (fixed rate on the original schedule; runs missed because the worker or
  // the task was slow are skipped, not bunched). The series ends when its
  // Timeout is cancelled (also from inside the task) or the timer stops. It
  // counts as one pending timeout for its whole life. A period shorter than
  // the tick runs once per tick. With an executor, runs may overlap if a run
  // takes longer than the period.
  // Throws as new_timeout(), and std::invalid_argument if period <= 0.
  std::shared_ptr<Timeout> new_periodic(Timeout::Task task, Duration initial_delay, Duration period);

  // Starts the worker thread. Idempotent; implicit in new_timeout().
  // Throws std::logic_error once stop() was called, std::system_error if
  // the thread cannot be started.
  void start();

  // Stops the worker and joins it. Returns the timeouts that never ran and
  // were not cancelled (one-shot ones not yet due, and live periodic series),
  // in no particular order; they stay in state `init`. A second call returns
  // an empty vector. Waits for a task running on the worker to return; tasks
  // already handed to the executor may still run afterwards.
  // Throws std::logic_error when called from a task on the worker thread.
  std::vector<std::shared_ptr<Timeout>> stop();

  // The "dynamic switch". While on, the worker runs every pending timeout at
  // its next wake-up regardless of deadline, and a new timeout as soon as the
  // worker picks it up (useful to drain or fast-forward, e.g. in shutdown or
  // tests). A periodic series then runs once per tick. Off restores normal
  // deadlines for whatever is still pending. Any thread; takes effect within
  // one worker wake-up.
  void set_expire_all(bool on);
  bool expire_all() const noexcept;

  // Timeouts scheduled and neither run, nor cancelled, nor handed back by
  // stop(). A live periodic series counts as one.
  std::int64_t pending_timeouts() const noexcept;
  // Tasks (or executor calls) that threw; each was logged (common/log.h).
  std::uint64_t failed_tasks() const noexcept;
  // Turns of the worker's loop (wake-ups). An idle timer does not tick, so
  // this grows with due times and submissions, not with elapsed time.
  std::uint64_t wakeups() const noexcept;

  Duration tick() const noexcept { return tick_; }
  // The clock the timer reads (Options::clock, or the steady clock).
  TimerClock& clock() const noexcept;
  int ticks_per_wheel() const noexcept { return ticks_per_wheel_; }  // rounded up to a power of two
  std::int64_t max_pending() const noexcept { return max_pending_; }

  // HashedWheelTimer objects alive in this process.
  static int instance_count() noexcept;

 private:
  std::shared_ptr<Timeout> submit(Timeout::Task task, Duration delay, Duration period);

  Duration tick_;
  int ticks_per_wheel_;
  std::int64_t max_pending_;
  std::shared_ptr<detail::TimerCore> core_;  // shared with the worker and every Timeout
};

}  // namespace heartwheel
