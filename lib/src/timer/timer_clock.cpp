// SteadyTimerClock's sleeper: a flag and a condition variable's timed wait on
// steady_clock. VirtualClock's sleeper is in virtual_clock.cpp.
#include <heartwheel/timer/timer_clock.h>

namespace heartwheel {

namespace {

class SteadySleeper final : public TimerClock::Sleeper {
 public:
  void sleep_until(std::optional<TimePoint> deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto woken = [this] { return woken_; };
    if (deadline)
      cv_.wait_until(lock, *deadline, woken);
    else
      cv_.wait(lock, woken);
    woken_ = false;
  }

  void wake() noexcept override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      woken_ = true;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool woken_ = false;  // guarded by mutex_
};

}  // namespace

std::shared_ptr<TimerClock::Sleeper> SteadyTimerClock::make_sleeper() {
  return std::make_shared<SteadySleeper>();
}

}  // namespace heartwheel
