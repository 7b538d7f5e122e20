// The machinery behind HashedWheelTimer: the queues, the producer gate, the
// worker thread and its wheel. Private to the library.
//
// Shared ownership: HashedWheelTimer, the worker thread and every Timeout hold
// a shared_ptr to the core, so a Timeout's cancel() can reach the cancel queue
// (and learn that the timer is gone) even after the HashedWheelTimer object
// was destroyed, and a timer destroyed from its own task can let its worker
// finish on its own.
//
// Who touches what
//   any thread : submit(), cancel(), stop(), set_expire_all(), the counters.
//   worker only: wheel_, registry_head_, unprocessed_ (read by stop() after
//                join), next_expire_all_pass_, Timeout::deadline_ after
//                submission, Timeout::self_/cancel_self_ after the push.
//
// The producer gate (why pushes never get lost at shutdown)
//   Every push happens inside gate_enter()/gate_leave(). stop() closes the
//   gate; the worker, before its final drain, waits until no producer is
//   inside. So a producer either saw the gate closed (new_timeout() throws,
//   cancel() just flips the state) or its push is drained and accounted for:
//   every Timeout ends up run, cancelled, or returned by stop(), and no
//   Timeout's self-reference is left in a dead queue. The same word counts
//   pushes between drains (see kPushesPerWake) at no extra atomic operation.
//
// Sleeping without lost wake-ups
//   The worker stores sleep_until_ (its planned wake-up) and sleeping_ = true
//   and then checks the queues; a producer pushes and then loads sleeping_
//   and sleep_until_. All are sequentially consistent, so at least one of
//   them sees the other (Dekker). A producer whose deadline is before
//   sleep_until_ then calls sleeper_->wake(); a later deadline needs no
//   wake-up, the worker drains the queue when it wakes at sleep_until_. The
//   sleeper (made by the clock, see timer_clock.h) keeps a wake-up that
//   comes before the worker sleeps, so none is lost; its mutex and condition
//   variable serve only this sleep/wake; the queues are lock-free.
//
// Time
//   Every read of the time goes through clock_ (steady_clock, or a
//   VirtualClock in tests), and the worker sleeps through sleeper_, so a
//   virtual clock drives the whole timer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <heartwheel/common/detail/mpsc_queue.h>
#include <heartwheel/timer/hashed_wheel_timer.h>
#include <heartwheel/timer/timeout.h>
#include <heartwheel/timer/timer_clock.h>
#include <heartwheel/timer/timing_wheel.h>

namespace heartwheel::detail {

class TimerCore {
 public:
  TimerCore(HashedWheelTimer& owner, Duration tick, std::int64_t max_pending,
            HashedWheelTimer::Executor executor, std::shared_ptr<TimerClock> clock);
  ~TimerCore();
  TimerCore(const TimerCore&) = delete;
  TimerCore& operator=(const TimerCore&) = delete;

  // Any thread. `self` is the shared_ptr that owns this core.
  std::shared_ptr<Timeout> submit(const std::shared_ptr<TimerCore>& self, Timeout::Task task,
                                  Duration delay, Duration period);
  void start(const std::shared_ptr<TimerCore>& self);
  std::vector<std::shared_ptr<Timeout>> stop();
  // Destruction from the worker's own task: stop without joining.
  void abandon() noexcept;
  // Called by Timeout::cancel() after it won the state CAS.
  void on_cancelled(Timeout& t) noexcept;
  void set_expire_all(bool on);
  bool expire_all() const noexcept { return expire_all_.load(std::memory_order_acquire); }

  bool on_worker_thread() const noexcept;
  HashedWheelTimer& owner() const noexcept { return owner_; }
  TimerClock& clock() const noexcept { return *clock_; }
  std::int64_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }
  std::uint64_t failed_tasks() const noexcept { return failed_.load(std::memory_order_relaxed); }
  std::uint64_t wakeups() const noexcept { return wakeups_.load(std::memory_order_relaxed); }

  static void log_error(const std::string& message) noexcept;

 private:
  enum class Lifecycle { created, started, stopped };

  // The producer gate word: bit 0 = closed, bits 1..31 count the producers
  // inside, bits 32..63 the pushes since the worker last started draining.
  static constexpr std::uint64_t kGateClosed = 1;
  static constexpr std::uint64_t kGateProducer = 2;
  static constexpr std::uint64_t kGateProducers = 0xffff'fffe;
  static constexpr std::uint64_t kGatePush = std::uint64_t{1} << 32;
  static constexpr std::uint64_t kPushesPerWake = HashedWheelTimer::kPushesPerWake;

  bool gate_enter() noexcept;
  void gate_leave() noexcept { gate_.fetch_sub(kGateProducer, std::memory_order_seq_cst); }
  // Leaves after a push; wakes the worker when the pushes reach kPushesPerWake.
  void gate_leave_after_push() noexcept;
  void wake_if_sleeping(TimePoint deadline) noexcept;
  void wake() noexcept;  // only once started: sleeper_ exists
  // The first tick boundary at or after t: when the wheel would run a timeout due at t.
  TimePoint tick_boundary_at_or_after(TimePoint t) const noexcept;

  // Worker.
  void run();
  bool drain_cancellations(std::size_t budget) noexcept;  // true if the budget ran out
  bool drain_submissions(std::size_t budget) noexcept;  // true if the budget ran out
  void expire_everything() noexcept;
  void sleep_until_due();
  void finish() noexcept;
  void expire(Timeout& t) noexcept;  // t is out of the wheel and the registry
  void run_task(Timeout& t) noexcept;
  void invoke(Timeout& t) noexcept;  // the task itself, exceptions logged
  template <class F>
  void guarded(const char* context, F&& fn) noexcept;  // runs fn; counts and logs what it throws
  void arm(Timeout& t) noexcept;     // into the wheel and the registry
  void disarm(Timeout& t) noexcept;  // out of both
  void unregister(Timeout& t) noexcept;  // out of the registry only
  void hand_back(Timeout& t) noexcept;  // to unprocessed_, or released if not init
  TimePoint next_period_deadline(const Timeout& t) const noexcept;
  static void on_wheel_fire(TimerEntry& entry);

  friend class heartwheel::Timeout;  // Timeout's constructor names on_wheel_fire

  HashedWheelTimer& owner_;
  const Duration tick_;
  const std::int64_t max_pending_;
  const HashedWheelTimer::Executor executor_;
  const std::shared_ptr<TimerClock> clock_;  // before origin_, which reads it
  const TimePoint origin_;  // the wheel's origin: tick boundaries are counted from it

  MpscQueue<SubmitHook> submissions_;
  MpscQueue<CancelHook> cancellations_;
  alignas(64) std::atomic<std::uint64_t> gate_{0};
  alignas(64) std::atomic<std::int64_t> pending_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::uint64_t> wakeups_{0};
  std::atomic<bool> expire_all_{false};
  std::atomic<bool> shutdown_{false};

  std::mutex lifecycle_mutex_;  // start/stop only, never on the submit path
  std::atomic<Lifecycle> lifecycle_{Lifecycle::created};
  std::atomic<bool> abandoned_{false};  // destroyed from its own task: drop unprocessed_
  std::thread worker_;
  // Made by start() before the worker runs (published with lifecycle_).
  std::shared_ptr<TimerClock::Sleeper> sleeper_;

  std::atomic<bool> sleeping_{false};
  std::atomic<Duration::rep> sleep_until_{0};  // TimePoint of the planned wake-up; max: none

  TimingWheel wheel_;
  Timeout* registry_head_ = nullptr;
  TimePoint next_expire_all_pass_{};
  std::vector<std::shared_ptr<Timeout>> unprocessed_;
};

}  // namespace heartwheel::detail
