// Private: two small tools of the cluster links. An Alarm is a TimerEntry
// that runs a function; a Graveyard holds links that must go but cannot be
// destroyed where that is decided (from inside one of their own callbacks)
// and destroys them on the wheel's next expiry, outside any of them.
#pragma once

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/timer/timer_entry.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "link.h"

namespace heartwheel::redis::detail {

class Alarm : public TimerEntry {
 public:
  Alarm(LoopWheel& wheel, std::function<void()> run)
      : TimerEntry(&fire), wheel_(wheel), run_(std::move(run)) {}
  ~Alarm() { wheel_.cancel(*this); }
  Alarm(const Alarm&) = delete;
  Alarm& operator=(const Alarm&) = delete;

  // Fires at `when` (moved if armed).
  void at(TimePoint when) noexcept {
    due_ = when;
    wheel_.schedule_at(*this, when);
  }
  // Fires at `when` unless armed earlier already.
  void no_later_than(TimePoint when) noexcept {
    if (!armed() || when < due_) {
      due_ = when;
      wheel_.schedule_at(*this, when);
    }
  }
  void cancel() noexcept { wheel_.cancel(*this); }

 private:
  static void fire(TimerEntry& e) { static_cast<Alarm&>(e).run_(); }
  LoopWheel& wheel_;
  std::function<void()> run_;
  TimePoint due_{};
};

class Graveyard {
 public:
  explicit Graveyard(LoopWheel& wheel) : alarm_(wheel, [this] { dead_.clear(); }), wheel_(wheel) {}
  // `link` is stopped by the caller; it is destroyed on the next expiry.
  void bury(std::unique_ptr<Link> link) {
    dead_.push_back(std::move(link));
    alarm_.at(wheel_.now());
  }

 private:
  std::vector<std::unique_ptr<Link>> dead_;
  Alarm alarm_;
  LoopWheel& wheel_;
};

}  // namespace heartwheel::redis::detail
