// See heartwheel/net/deadline_timer.h. The one place where a connection's
// deadlines meet a timer: its wheel entry.
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/timing_wheel.h>

#include <cassert>

namespace heartwheel::net {

DeadlineTimer::~DeadlineTimer() { assert(!armed() && "call stop_deadlines() in the owner's destructor"); }

void DeadlineTimer::start_deadlines(const IdlePolicy& policy, Duration jitter_offset) noexcept {
  stopped_ = false;
  set_.start(policy, timers().now(), jitter_offset);
  rearm();
}

void DeadlineTimer::stop_deadlines() noexcept {
  stopped_ = true;
  // Only touch the service if armed: a connection may be freed after the
  // wheel (its owner went away first), and then it is never armed.
  if (armed()) timers().cancel(*this);
  armed_for_ = kNever;
}

void DeadlineTimer::set_idle_policy_ref(const IdlePolicy& policy) noexcept {
  set_.set_policy(policy);
  if (!stopped_) rearm();
}

void DeadlineTimer::policy_changed() noexcept {
  if (stopped_) return;
  if (set_.policy().refresh == RefreshMode::eager)
    rearm();
  else
    rearm_if_earlier();
}

bool DeadlineTimer::set_deadline(Deadline kind, TimePoint when) noexcept {
  assert(DeadlineSet::is_absolute(kind) && "idle slots follow the IdlePolicy");
  if (!set_.set(kind, when)) return false;
  if (stopped_) return true;
  // Later or cleared: lazy keeps the armed time (the entry fires, finds the
  // slot not due and re-arms); eager moves the entry now. The entry is never
  // armed later than the set's next deadline, so only a slot set before the
  // armed time can move it: otherwise no scan of the slots, just the store.
  if (set_.policy().refresh == RefreshMode::eager)
    rearm();
  else if (when < armed_for_)
    rearm_if_earlier();
  return true;
}

void DeadlineTimer::begin_request(Duration timeout) noexcept {
  const TimePoint deadline = deadline_after(timers().now(), timeout);
  set_.begin_request(deadline);
  if (!stopped_ && deadline < armed_for_) rearm_if_earlier();
}

void DeadlineTimer::end_request() noexcept {
  set_.end_request();
  if (!stopped_ && set_.policy().refresh == RefreshMode::eager) rearm();
}

void DeadlineTimer::on_entry(TimerEntry& entry) {
  auto& self = static_cast<DeadlineTimer&>(entry);
  // The wheel's time, not the service's: under LoopWheel it is when the
  // loop's poll returned, so bytes that arrived since then (unread yet) can
  // not make a slot look overdue. See loop_wheel.h, "Stalls".
  self.fire(self.timers().wheel().now());
}

void DeadlineTimer::fire(TimePoint now) {
  const TimePoint due = armed_for_;
  armed_for_ = kNever;
  if (stopped_) return;
  if (due != kNever) on_timer_fired(now > due ? now - due : Duration{0});
  firing_ = true;
  // Bounded: a handler that sets the firing slot again at or before `now`
  // gets it at the next expiry (the wheel runs entries re-armed into the
  // past on its next advance), not in an endless loop here.
  for (std::size_t n = 0; !stopped_ && n < 2 * DeadlineSet::kSlots; ++n) {
    const auto event = set_.take_due(now);
    if (!event) break;
    on_deadline_event(*event, now);
  }
  firing_ = false;
  if (!stopped_) rearm();
}

void DeadlineTimer::rearm() noexcept {
  if (firing_) return;  // fire() re-arms once at the end
  const TimePoint due = set_.next_deadline();
  if (due == armed_for_) return;
  arm(due);
}

void DeadlineTimer::rearm_if_earlier() noexcept {
  if (firing_) return;
  const TimePoint due = set_.next_deadline();
  if (due < armed_for_) arm(due);
}

void DeadlineTimer::arm(TimePoint due) noexcept {
  armed_for_ = due;
  if (due == kNever) {
    timers().cancel(*this);
  } else {
    timers().schedule_at(*this, due);
  }
}

}  // namespace heartwheel::net
