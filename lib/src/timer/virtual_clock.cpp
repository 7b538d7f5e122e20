// VirtualClock: hand-driven time, and how threads sleep on it. advance() is a
// small discrete-event loop: wait until every sleeper has caught up with the
// current time, move to the earliest wake-up any of them asked for (or the
// target), wake them, repeat.
#include <heartwheel/timer/virtual_clock.h>

#include <condition_variable>
#include <stdexcept>
#include <string>
#include <thread>

namespace heartwheel {

namespace {
constexpr std::chrono::seconds kCatchUpLimit{60};  // real time; see wait_caught_up()
}  // namespace

// One thread sleeping on a VirtualClock. Its state is guarded by mutex_; the
// thread and advance() both wait on cv_, so every change notifies all.
class VirtualClock::VirtualSleeper final : public TimerClock::Sleeper {
 public:
  explicit VirtualSleeper(const VirtualClock& clock) noexcept : clock_(clock) {}

  void begin() noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    thread_ = std::this_thread::get_id();
  }

  void sleep_until(std::optional<TimePoint> deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    thread_ = std::this_thread::get_id();
    while (!woken_ && !(deadline && clock_.now() >= *deadline)) {
      parked_ = true;
      wake_at_ = deadline;
      cv_.notify_all();  // an advance() waiting for this thread to catch up
      cv_.wait(lock);
    }
    parked_ = false;
    woken_ = false;
  }

  void wake() noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    woken_ = true;
    cv_.notify_all();
  }

  void end() noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
    cv_.notify_all();
  }

  // advance(): the clock moved; the thread re-checks its wake-up time. The
  // lock orders this after the thread's own check of now() (no lost wake-up).
  void time_moved() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    cv_.notify_all();
  }

  // advance(): waits until the thread is asleep with nothing due at `now`
  // (and no wake() pending), or has ended; returns its next wake-up time.
  // Does not wait for the calling thread itself. A thread that does not
  // catch up within kCatchUpLimit of real time is stuck (a task waiting for
  // the advancing thread?): throws rather than hang the test.
  std::optional<TimePoint> wait_caught_up(TimePoint now) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (thread_ == std::this_thread::get_id()) return std::nullopt;
    const bool caught_up = cv_.wait_for(lock, kCatchUpLimit, [&] {
      return ended_ || (parked_ && !woken_ && (!wake_at_ || *wake_at_ > now));
    });
    if (!caught_up)
      throw std::runtime_error(
          "VirtualClock::advance: a thread sleeping on this clock (a timer's worker) has not gone "
          "back to sleep within 60 s of real time; is one of its tasks blocked waiting for the "
          "thread that advances the clock?");
    return ended_ ? std::nullopt : wake_at_;
  }

 private:
  const VirtualClock& clock_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread::id thread_;            // the sleeping thread, once known
  bool woken_ = false;                // wake() since the last return from sleep_until()
  bool parked_ = false;               // blocked in sleep_until(), having seen the time
  bool ended_ = false;                // will not sleep again
  std::optional<TimePoint> wake_at_;  // while parked: the deadline it sleeps for
};

std::shared_ptr<TimerClock::Sleeper> VirtualClock::make_sleeper() {
  auto sleeper = std::make_shared<VirtualSleeper>(*this);
  std::lock_guard<std::mutex> lock(sleepers_mutex_);
  sleepers_.push_back(sleeper);
  return sleeper;
}

std::vector<std::shared_ptr<VirtualClock::VirtualSleeper>> VirtualClock::live_sleepers() {
  std::vector<std::shared_ptr<VirtualSleeper>> live;
  std::lock_guard<std::mutex> lock(sleepers_mutex_);
  for (auto it = sleepers_.begin(); it != sleepers_.end();) {
    if (auto s = it->lock()) {
      live.push_back(std::move(s));
      ++it;
    } else {
      it = sleepers_.erase(it);  // its owner is gone
    }
  }
  return live;
}

void VirtualClock::move_to(TimePoint t) noexcept {
  TimePoint current = now_.load(std::memory_order_acquire);
  while (current < t && !now_.compare_exchange_weak(current, t, std::memory_order_acq_rel)) {
  }
}

void VirtualClock::advance(Duration d) {
  if (d < Duration::zero())
    throw std::invalid_argument(
        "VirtualClock::advance: the step must be >= 0 (time never goes back), got " +
        std::to_string(d.count()) + " ns");
  const TimePoint target = now() + d;
  for (;;) {
    const auto sleepers = live_sleepers();
    std::optional<TimePoint> earliest;
    for (const auto& s : sleepers) {
      const auto at = s->wait_caught_up(now());  // > now() when set
      if (at && (!earliest || *at < *earliest)) earliest = at;
    }
    if (now() >= target) return;
    move_to(earliest && *earliest < target ? *earliest : target);
    for (const auto& s : sleepers) s->time_moved();
  }
}

std::size_t VirtualClock::run_for(TimingWheel& wheel, Duration d) {
  if (d < Duration::zero())
    throw std::invalid_argument(
        "VirtualClock::run_for: the step must be >= 0 (time never goes back), got " +
        std::to_string(d.count()) + " ns");
  const TimePoint end = now() + d;
  std::size_t fired = 0;
  for (auto next = wheel.next_deadline(); next && *next <= end; next = wheel.next_deadline()) {
    move_to(*next);
    const std::size_t n = wheel.advance(now());
    fired += n;
    // Nothing ran and nothing changed: the remaining work is due later.
    if (n == 0 && wheel.next_deadline() == next && *next <= now()) break;
  }
  move_to(end);
  fired += wheel.advance(now());
  advance(Duration::zero());  // threads sleeping on this clock catch up
  return fired;
}

}  // namespace heartwheel
