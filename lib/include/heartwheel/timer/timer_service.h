// heartwheel/timer/timer_service.h - what the layers above the wheel schedule through.
//
// A TimerService is a wheel on a clock (timer_clock.h): it tells the time
// from its clock and arms entries in its wheel. Connections and HTTP
// sessions take a TimerService& so that production code runs on a libuv
// loop (LoopWheel: a wheel on the loop's LoopClock) while tests drive the
// very same code on hand-advanced time (ManualTimerService in
// virtual_clock.h: a wheel on a VirtualClock) without sleeping.
//
// Always schedule relative to the service's now(), never to
// TimingWheel::now(): the wheel only learns the time when it is advanced,
// while now() here is the clock's current time.
// Cost: now() is one virtual call (the clock's); schedule_at() and cancel()
// one each, then the wheel's O(1).
// Threads: the owning loop's thread only.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_clock.h>
#include <heartwheel/timer/timer_entry.h>

namespace heartwheel {

class TimingWheel;

class TimerService {
 public:
  // The current time of this service's clock.
  TimePoint now() const noexcept { return clock_->now(); }
  // The clock the service reads.
  const TimerClock& clock() const noexcept { return *clock_; }
  // Arms or moves `entry` to fire at `deadline` (see TimingWheel::schedule_at).
  virtual void schedule_at(TimerEntry& entry, TimePoint deadline) noexcept = 0;
  // Disarms `entry`; true if it was armed.
  virtual bool cancel(TimerEntry& entry) noexcept = 0;
  // The wheel behind the service, for statistics.
  virtual const TimingWheel& wheel() const noexcept = 0;

  // Arms `entry` `delay` from now() (<= 0: due at the next expiry). The sum
  // saturates, so Duration::max() cannot wrap into the past; the wheel clamps
  // what it cannot hold to its max_delay().
  void schedule(TimerEntry& entry, Duration delay) noexcept {
    schedule_at(entry, delay.count() <= 0 ? now() : deadline_after(now(), delay));
  }

 protected:
  // `clock` must outlive the service (it is usually a member of the derived
  // class: only its address is taken here, before it is constructed).
  explicit TimerService(const TimerClock& clock) noexcept : clock_(&clock) {}
  ~TimerService() = default;
  TimerService(const TimerService&) = delete;
  TimerService& operator=(const TimerService&) = delete;

 private:
  const TimerClock* clock_;
};

}  // namespace heartwheel
