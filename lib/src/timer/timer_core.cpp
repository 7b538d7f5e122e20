// TimerCore, the side any thread calls: submission, cancellation, start, stop
// and the wake-up of the worker. The worker's own loop is in timer_worker.cpp.
#include "timer_core.h"

#include <heartwheel/common/log.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

namespace heartwheel::detail {

namespace {
// Keeps now + delay inside the nanosecond range (about 73 years either way).
constexpr Duration kMaxDelay{std::numeric_limits<Duration::rep>::max() / 4};
}  // namespace

TimerCore::TimerCore(HashedWheelTimer& owner, Duration tick, std::int64_t max_pending,
                     HashedWheelTimer::Executor executor, std::shared_ptr<TimerClock> clock)
    : owner_(owner),
      tick_(tick),
      max_pending_(max_pending),
      executor_(std::move(executor)),
      clock_(std::move(clock)),
      origin_(clock_->now()),
      // fifo: tasks due on the same tick run in the order they reached the
      // wheel, as the contract (and Netty's bucket walk) has it.
      wheel_(tick, origin_, SameTickOrder::fifo) {}

TimerCore::~TimerCore() {
  // Reached after the worker finished (it holds a reference while it runs),
  // or when it never started. A detached worker already ended its thread
  // function, which is what dropped the last reference.
  if (worker_.joinable()) worker_.detach();
}

void TimerCore::log_error(const std::string& message) noexcept {
  // log::write never throws: logging must never take the worker down.
  log::error("heartwheel::HashedWheelTimer: " + message);
}

bool TimerCore::gate_enter() noexcept {
  const std::uint64_t before = gate_.fetch_add(kGateProducer, std::memory_order_seq_cst);
  if ((before & kGateClosed) == 0) return true;
  gate_leave();
  return false;
}

void TimerCore::gate_leave_after_push() noexcept {
  const std::uint64_t before = gate_.fetch_add(kGatePush - kGateProducer, std::memory_order_seq_cst);
  // Every push between two drains sees a distinct count: exactly one wakes.
  if ((before >> 32) + 1 == kPushesPerWake) wake();
}

void TimerCore::wake_if_sleeping(TimePoint deadline) noexcept {
  if (!sleeping_.load(std::memory_order_seq_cst)) return;
  // The worker wakes at sleep_until_ anyway and drains the queue then. The
  // wheel runs a timeout at the tick boundary at or after its deadline, so
  // only a boundary before sleep_until_ (or expire-all mode) needs a wake-up.
  // This keeps a stream of submissions from waking the worker once per push.
  if (tick_boundary_at_or_after(deadline).time_since_epoch().count() >=
          sleep_until_.load(std::memory_order_seq_cst) &&
      !expire_all_.load(std::memory_order_acquire))
    return;
  wake();
}

TimePoint TimerCore::tick_boundary_at_or_after(TimePoint t) const noexcept {
  const Duration since = t - origin_;
  if (since <= Duration::zero()) return origin_;
  return origin_ + ((since + tick_ - Duration(1)) / tick_) * tick_;
}

void TimerCore::wake() noexcept { sleeper_->wake(); }

void TimerCore::start(const std::shared_ptr<TimerCore>& self) {
  if (lifecycle_.load(std::memory_order_acquire) == Lifecycle::started) return;
  std::lock_guard<std::mutex> lock(lifecycle_mutex_);
  switch (lifecycle_.load(std::memory_order_relaxed)) {
    case Lifecycle::started:
      return;
    case Lifecycle::stopped:
      throw std::logic_error("HashedWheelTimer: cannot start a timer after stop(); create a new one");
    case Lifecycle::created:
      break;
  }
  // The sleeper exists before the thread, so a VirtualClock advanced right
  // after start() waits for this worker too.
  sleeper_ = clock_->make_sleeper();
  // The thread keeps the core alive, so a timer destroyed from its own task
  // can let the worker run to the end of that task.
  try {
    worker_ = std::thread([core = self] { core->run(); });
  } catch (...) {
    sleeper_->end();
    throw;
  }
  lifecycle_.store(Lifecycle::started, std::memory_order_release);
}

std::shared_ptr<Timeout> TimerCore::submit(const std::shared_ptr<TimerCore>& self, Timeout::Task task,
                                           Duration delay, Duration period) {
  if (!task) throw std::invalid_argument("HashedWheelTimer: the task is empty (a default-constructed std::function)");
  start(self);
  const TimePoint deadline = clock_->now() + std::clamp(delay, -kMaxDelay, kMaxDelay);
  auto t = std::make_shared<Timeout>(Timeout::Key{}, self, std::move(task), deadline, period);

  if (!gate_enter())
    throw std::logic_error("HashedWheelTimer: new_timeout() after stop(); create a new timer");
  const std::int64_t pending = pending_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (max_pending_ > 0 && pending > max_pending_) {
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    gate_leave();
    throw RejectedExecution("HashedWheelTimer: " + std::to_string(pending - 1) +
                            " timeouts are pending, the limit max_pending is " +
                            std::to_string(max_pending_) +
                            "; wait for some to run, cancel some, or raise max_pending");
  }
  t->self_ = t;
  submissions_.push(*t);
  gate_leave_after_push();
  wake_if_sleeping(deadline);
  return t;
}

void TimerCore::on_cancelled(Timeout& t) noexcept {
  // Outside the gate the worker is gone or going: the timeout is simply not
  // pending any more, and stop() accounts for it (pending() reads 0).
  if (!gate_enter()) return;
  pending_.fetch_sub(1, std::memory_order_acq_rel);
  t.cancel_self_ = t.shared_from_this();
  cancellations_.push(t);
  // No wake-up per cancel: a cancelled entry costs only memory until the
  // worker's next wake-up, and waking a sleeping thread per cancel would cost
  // far more in the common "almost every timeout is cancelled" workload.
  // kPushesPerWake bounds that memory.
  gate_leave_after_push();
}

void TimerCore::set_expire_all(bool on) {
  expire_all_.store(on, std::memory_order_release);
  // Not started yet: the worker reads the switch when it starts.
  if (lifecycle_.load(std::memory_order_acquire) == Lifecycle::started) wake();
}

std::vector<std::shared_ptr<Timeout>> TimerCore::stop() {
  if (on_worker_thread())
    throw std::logic_error(
        "HashedWheelTimer::stop() called from a timer task; it would join the thread the task "
        "runs on. Call stop() from another thread (a task may cancel timeouts instead)");
  std::lock_guard<std::mutex> lock(lifecycle_mutex_);
  const Lifecycle was = lifecycle_.exchange(Lifecycle::stopped, std::memory_order_acq_rel);
  if (was == Lifecycle::stopped) return {};
  gate_.fetch_or(kGateClosed, std::memory_order_seq_cst);
  if (was == Lifecycle::created) return {};  // nothing was ever submitted
  shutdown_.store(true, std::memory_order_seq_cst);
  wake();
  worker_.join();
  pending_.store(0, std::memory_order_release);
  return std::move(unprocessed_);
}

void TimerCore::abandon() noexcept {
  std::lock_guard<std::mutex> lock(lifecycle_mutex_);
  lifecycle_.store(Lifecycle::stopped, std::memory_order_release);
  gate_.fetch_or(kGateClosed, std::memory_order_seq_cst);
  abandoned_.store(true, std::memory_order_release);
  shutdown_.store(true, std::memory_order_seq_cst);
  // Called on the worker thread itself: it sees shutdown_ when the current
  // task returns. The thread object cannot join itself.
  if (worker_.joinable()) worker_.detach();
}

}  // namespace heartwheel::detail
