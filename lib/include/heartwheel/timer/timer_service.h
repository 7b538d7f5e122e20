// heartwheel/timer/timer_service.h - what the layers above the wheel schedule through.
//
// A TimerService pairs a wheel with a clock. Connections and HTTP sessions take
// a TimerService& so that production code runs on a libuv loop (LoopWheel)
// while tests drive the very same code on hand-advanced time
// (ManualTimerService in virtual_clock.h) without sleeping.
//
// Always schedule relative to the service's now(), never to
// TimingWheel::now(): the wheel only learns the time when it is advanced,
// while now() here is the driver's current time.
// Threads: the owning loop's thread only.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_entry.h>

namespace heartwheel {

class TimingWheel;

class TimerService {
 public:
  // The current time of this service's clock.
  virtual TimePoint now() const noexcept = 0;
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
  ~TimerService() = default;
};

}  // namespace heartwheel
