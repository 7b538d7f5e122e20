// HashedWheelTimer and Timeout: argument checks, the instance count, and the
// forwarding to TimerCore (timer_core.cpp for the calling side,
// timer_worker.cpp for the worker).
#include <heartwheel/timer/hashed_wheel_timer.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>

#include "timer_core.h"

namespace heartwheel {

namespace {

std::atomic<int> instances{0};
std::atomic<bool> warned_instances{false};

int round_up_to_power_of_two(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

HashedWheelTimer::Options validated(HashedWheelTimer::Options o) {
  if (o.tick <= Duration::zero())
    throw std::invalid_argument("HashedWheelTimer: tick must be positive (got " +
                                std::to_string(o.tick.count()) + " ns)");
  if (o.ticks_per_wheel <= 0 || o.ticks_per_wheel > HashedWheelTimer::kMaxTicksPerWheel)
    throw std::invalid_argument("HashedWheelTimer: ticks_per_wheel must be in 1 .. 2^30 (got " +
                                std::to_string(o.ticks_per_wheel) + ")");
  if (o.max_pending < 0)
    throw std::invalid_argument("HashedWheelTimer: max_pending must be >= 0, 0 meaning unlimited (got " +
                                std::to_string(o.max_pending) + ")");
  o.ticks_per_wheel = round_up_to_power_of_two(o.ticks_per_wheel);
  return o;
}

}  // namespace

HashedWheelTimer::HashedWheelTimer() : HashedWheelTimer(Options{}) {}

HashedWheelTimer::HashedWheelTimer(Duration tick, int ticks_per_wheel, std::int64_t max_pending,
                                   Executor executor)
    : HashedWheelTimer(Options{tick, ticks_per_wheel, max_pending, std::move(executor)}) {}

HashedWheelTimer::HashedWheelTimer(Options options) {
  options = validated(std::move(options));
  tick_ = options.tick;
  ticks_per_wheel_ = options.ticks_per_wheel;
  max_pending_ = options.max_pending;
  if (!options.clock) options.clock = std::make_shared<SteadyTimerClock>();
  core_ = std::make_shared<detail::TimerCore>(
      *this, tick_, max_pending_, std::move(options.executor), std::move(options.clock));
  const int now_alive = instances.fetch_add(1, std::memory_order_relaxed) + 1;
  if (now_alive > kInstanceWarningThreshold && !warned_instances.exchange(true)) {
    detail::TimerCore::log_error(
        std::to_string(now_alive) + " instances exist (more than " +
        std::to_string(kInstanceWarningThreshold) +
        "). Each timer is a thread and a wheel meant to be shared: create few timers and "
        "schedule many timeouts on each. (This warning is printed once.)");
  }
}

HashedWheelTimer::~HashedWheelTimer() {
  instances.fetch_sub(1, std::memory_order_relaxed);
  if (core_->on_worker_thread())
    core_->abandon();
  else
    core_->stop();
}

std::shared_ptr<Timeout> HashedWheelTimer::new_timeout(Timeout::Task task, Duration delay) {
  return core_->submit(core_, std::move(task), delay, Duration::zero());
}

std::shared_ptr<Timeout> HashedWheelTimer::new_periodic(Timeout::Task task, Duration initial_delay,
                                                        Duration period) {
  if (period <= Duration::zero())
    throw std::invalid_argument("HashedWheelTimer::new_periodic: period must be positive (got " +
                                std::to_string(period.count()) + " ns)");
  return core_->submit(core_, std::move(task), initial_delay, period);
}

void HashedWheelTimer::start() { core_->start(core_); }

std::vector<std::shared_ptr<Timeout>> HashedWheelTimer::stop() { return core_->stop(); }

void HashedWheelTimer::set_expire_all(bool on) { core_->set_expire_all(on); }

bool HashedWheelTimer::expire_all() const noexcept { return core_->expire_all(); }

std::int64_t HashedWheelTimer::pending_timeouts() const noexcept { return core_->pending(); }

std::uint64_t HashedWheelTimer::failed_tasks() const noexcept { return core_->failed_tasks(); }

std::uint64_t HashedWheelTimer::wakeups() const noexcept { return core_->wakeups(); }

TimerClock& HashedWheelTimer::clock() const noexcept { return core_->clock(); }

int HashedWheelTimer::instance_count() noexcept { return instances.load(std::memory_order_relaxed); }

Timeout::Timeout(Key, std::shared_ptr<detail::TimerCore> core, Task task, TimePoint deadline,
                 Duration period) noexcept
    : TimerEntry(&detail::TimerCore::on_wheel_fire),
      deadline_(deadline),
      period_(period),
      task_(std::move(task)),
      core_(std::move(core)) {}

bool Timeout::cancel() noexcept {
  std::uint8_t expected = kInit;
  if (!state_.compare_exchange_strong(expected, kCancelled, std::memory_order_acq_rel)) return false;
  core_->on_cancelled(*this);
  return true;
}

HashedWheelTimer& Timeout::timer() const noexcept { return core_->owner(); }

}  // namespace heartwheel
