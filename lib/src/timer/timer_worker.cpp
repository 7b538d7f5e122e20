// TimerCore, the worker thread's side: the loop that moves submissions into
// the wheel, unlinks cancelled entries, runs what is due and sleeps until the
// wheel's next deadline. Everything here runs on the worker thread only.
#include "timer_core.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace heartwheel::detail {

namespace {
thread_local const TimerCore* current_worker = nullptr;
}  // namespace

bool TimerCore::on_worker_thread() const noexcept { return current_worker == this; }

void TimerCore::run() {
  current_worker = this;
  sleeper_->begin();
  while (!shutdown_.load(std::memory_order_acquire)) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    // Cancellations first, so cancelled entries leave the wheel before it
    // advances (the state CAS would skip them anyway); then the expire-all
    // pass over what is already in the wheel, so a periodic series submitted
    // now runs once, not twice.
    gate_.fetch_and(kGateClosed | kGateProducers, std::memory_order_relaxed);  // restart the push count
    bool backlog = drain_cancellations(HashedWheelTimer::kMaxTransfersPerTick);
    if (expire_all_.load(std::memory_order_acquire)) expire_everything();
    backlog |= drain_submissions(HashedWheelTimer::kMaxTransfersPerTick);
    wheel_.advance(clock_->now());
    if (!backlog) sleep_until_due();
  }
  finish();
  sleeper_->end();
  current_worker = nullptr;
}

bool TimerCore::drain_cancellations(std::size_t budget) noexcept {
  for (std::size_t n = 0; n < budget; ++n) {
    CancelHook* hook = cancellations_.pop();
    if (hook == nullptr) return false;
    Timeout& t = static_cast<Timeout&>(*hook);
    const std::shared_ptr<Timeout> hold = std::move(t.cancel_self_);
    // Not armed: still in the submission queue (dropped when drained), or
    // already out of the wheel (a periodic series cancelled during its run).
    if (t.armed()) {
      disarm(t);
      t.self_.reset();
    }
  }
  return !cancellations_.empty();
}

bool TimerCore::drain_submissions(std::size_t budget) noexcept {
  const bool at_once = expire_all_.load(std::memory_order_acquire);
  for (std::size_t n = 0; n < budget; ++n) {
    SubmitHook* hook = submissions_.pop();
    if (hook == nullptr) return false;
    Timeout& t = static_cast<Timeout&>(*hook);
    if (t.state_.load(std::memory_order_acquire) != Timeout::kInit) {
      t.self_.reset();  // cancelled before it reached the wheel
    } else if (at_once) {
      expire(t);
    } else {
      arm(t);
    }
  }
  return !submissions_.empty();
}

void TimerCore::expire_everything() noexcept {
  // One pass per tick at most: a periodic series re-arms itself during the
  // pass and would otherwise run in every loop turn.
  const TimePoint now = clock_->now();
  if (now < next_expire_all_pass_) return;
  next_expire_all_pass_ = now + tick_;
  // Detach the registry first: expire() re-arms periodic series into a fresh one.
  Timeout* t = std::exchange(registry_head_, nullptr);
  while (t != nullptr) {
    Timeout* next = t->registry_next_;
    wheel_.cancel(*t);
    t->registry_prev_ = t->registry_next_ = nullptr;
    expire(*t);
    t = next;
  }
}

void TimerCore::sleep_until_due() {
  std::optional<TimePoint> due = wheel_.next_deadline();
  if (expire_all_.load(std::memory_order_acquire) && registry_head_ != nullptr)
    due = due ? std::min(*due, next_expire_all_pass_) : next_expire_all_pass_;
  const auto as_rep = [](TimePoint t) { return t.time_since_epoch().count(); };

  sleep_until_.store(due ? as_rep(*due) : std::numeric_limits<Duration::rep>::max(),
                     std::memory_order_seq_cst);
  sleeping_.store(true, std::memory_order_seq_cst);
  // A submission pushed before sleeping_ became visible is seen here; one
  // pushed after sees sleeping_ and sleep_until_ (see timer_core.h). A
  // wake() that came in meanwhile ends the sleep at once (the sleeper keeps it).
  bool skip = shutdown_.load(std::memory_order_seq_cst);
  if (!skip && !submissions_.empty()) {
    if (expire_all_.load(std::memory_order_acquire)) {
      skip = true;  // new timeouts run at once
    } else {
      // Submissions that came in while we were awake did not wake us. None
      // can be due before the next tick boundary (deadlines round up to one)
      // unless its delay was <= 0, which the contract puts at the next tick:
      // pick them up then, once per tick, instead of once per push. Lowering
      // sleep_until_ is always safe for producers reading it concurrently.
      const TimePoint boundary = tick_boundary_at_or_after(clock_->now() + Duration(1));
      if (!due || boundary < *due) due = boundary;
      sleep_until_.store(as_rep(*due), std::memory_order_seq_cst);
    }
  }
  if (!skip) sleeper_->sleep_until(due);
  sleeping_.store(false, std::memory_order_seq_cst);
}

void TimerCore::finish() noexcept {
  // stop() closed the gate before raising shutdown_; once no producer is
  // inside, the queues are complete and can be drained for good.
  while ((gate_.load(std::memory_order_seq_cst) & kGateProducers) != 0) std::this_thread::yield();
  drain_cancellations(SIZE_MAX);
  while (SubmitHook* hook = submissions_.pop()) hand_back(static_cast<Timeout&>(*hook));
  while (Timeout* t = registry_head_) {
    disarm(*t);
    hand_back(*t);
  }
  if (abandoned_.load(std::memory_order_acquire)) unprocessed_.clear();
}

void TimerCore::expire(Timeout& t) noexcept {
  // After stop() no task starts any more; what was due is handed back.
  if (shutdown_.load(std::memory_order_acquire)) {
    hand_back(t);
    return;
  }
  if (t.period_ == Duration::zero()) {
    std::uint8_t expected = Timeout::kInit;
    if (t.state_.compare_exchange_strong(expected, Timeout::kExpired, std::memory_order_acq_rel)) {
      pending_.fetch_sub(1, std::memory_order_acq_rel);
      run_task(t);
    }
    t.self_.reset();  // may destroy t
    return;
  }
  if (t.state_.load(std::memory_order_acquire) == Timeout::kInit) run_task(t);
  if (t.state_.load(std::memory_order_acquire) != Timeout::kInit) {
    t.self_.reset();  // cancelled, possibly by its own task
    return;
  }
  t.deadline_ = next_period_deadline(t);
  arm(t);
}

TimePoint TimerCore::next_period_deadline(const Timeout& t) const noexcept {
  TimePoint next = t.deadline_ + t.period_;
  const TimePoint now = clock_->now();
  if (next <= now) next += ((now - next) / t.period_ + 1) * t.period_;  // skip missed runs
  return next;
}

template <class F>
void TimerCore::guarded(const char* context, F&& fn) noexcept {
  try {
    fn();
    return;
  } catch (const std::exception& e) {
    log_error(std::string(context) + ": " + e.what());
  } catch (...) {
    log_error(std::string(context) + ": a non-standard exception");
  }
  failed_.fetch_add(1, std::memory_order_relaxed);
}

void TimerCore::run_task(Timeout& t) noexcept {
  if (!executor_) {
    invoke(t);
    return;
  }
  guarded("the executor threw, a task is lost", [&] {
    executor_([keep = t.shared_from_this()] {
      // A periodic run handed over just before cancel() is skipped; a
      // one-shot one is already `expired` and cancel() returned false.
      if (keep->period_ != Duration::zero() && keep->is_cancelled()) return;
      keep->core_->invoke(*keep);
    });
  });
}

void TimerCore::invoke(Timeout& t) noexcept {
  guarded("a task threw", [&] { t.task_(t); });
}

void TimerCore::arm(Timeout& t) noexcept {
  wheel_.schedule_at(t, t.deadline_);
  t.registry_prev_ = nullptr;
  t.registry_next_ = registry_head_;
  if (registry_head_ != nullptr) registry_head_->registry_prev_ = &t;
  registry_head_ = &t;
}

void TimerCore::unregister(Timeout& t) noexcept {
  if (t.registry_prev_ != nullptr)
    t.registry_prev_->registry_next_ = t.registry_next_;
  else
    registry_head_ = t.registry_next_;
  if (t.registry_next_ != nullptr) t.registry_next_->registry_prev_ = t.registry_prev_;
  t.registry_prev_ = t.registry_next_ = nullptr;
}

void TimerCore::disarm(Timeout& t) noexcept {
  wheel_.cancel(t);
  unregister(t);
}

void TimerCore::hand_back(Timeout& t) noexcept {
  if (t.state_.load(std::memory_order_acquire) == Timeout::kInit)
    unprocessed_.push_back(std::move(t.self_));
  else
    t.self_.reset();
}

void TimerCore::on_wheel_fire(TimerEntry& entry) {
  // The wheel has already unlinked the entry.
  Timeout& t = static_cast<Timeout&>(entry);
  TimerCore& core = *t.core_;
  core.unregister(t);
  core.expire(t);
}

}  // namespace heartwheel::detail
