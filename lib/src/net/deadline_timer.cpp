// See heartwheel/net/deadline_timer.h. The one place where a connection's
// deadlines meet a timer: its wheel entry.
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/timing_wheel.h>

#include <cassert>

namespace heartwheel::net {

DeadlineTimer::~DeadlineTimer() { assert(!armed() && "call stop_deadlines() in the owner's destructor"); }

void DeadlineTimer::start_deadlines(const IdlePolicy& policy, Duration jitter_offset) noexcept {
  const TimerService& t = timers();
  set_.start(policy, t.now(), t.wheel().scale(), jitter_offset);
  set_flag(detail::DeadlineSet::kOwnerStopped, false);
  rearm();
}

void DeadlineTimer::stop_deadlines() noexcept {
  set_flag(detail::DeadlineSet::kOwnerStopped, true);
  // Only touch the service if armed: a connection may be freed after the
  // wheel (its owner went away first), and then it is never armed.
  if (armed()) timers().cancel(*this);
}

void DeadlineTimer::set_idle_policy_ref(const IdlePolicy& policy) noexcept {
  set_.set_policy(policy);
  if (!deadlines_stopped()) rearm();
}

void DeadlineTimer::policy_changed() noexcept {
  if (deadlines_stopped()) return;
  if (set_.policy().refresh == RefreshMode::eager)
    rearm();
  else
    rearm_if_earlier();
}

bool DeadlineTimer::set_deadline(Deadline kind, TimePoint when) noexcept {
  assert(detail::DeadlineSet::is_absolute(kind) && "idle slots follow the IdlePolicy");
  const TimerService& t = timers();
  if (!set_.set(kind, when, t.now(), t.wheel().scale())) return false;
  if (deadlines_stopped()) return true;
  // Later or cleared: lazy keeps the armed time (the entry fires, finds the
  // slot not due and re-arms); eager moves the entry now. The entry is never
  // armed later than the set's next deadline, so only a slot set before the
  // armed time can move it: otherwise no scan of the slots, just the store.
  if (set_.policy().refresh == RefreshMode::eager)
    rearm();
  else if (when < armed_for())
    rearm_if_earlier();
  return true;
}

void DeadlineTimer::begin_request(Duration timeout) noexcept {
  const TimerService& t = timers();
  const TimePoint now = t.now();
  const TimePoint deadline = deadline_after(now, timeout);
  set_.begin_request(deadline, now, t.wheel().scale());
  if (!deadlines_stopped() && deadline < armed_for()) rearm_if_earlier();
}

void DeadlineTimer::end_request() noexcept {
  set_.end_request();
  if (!deadlines_stopped() && set_.policy().refresh == RefreshMode::eager) rearm();
}

void DeadlineTimer::on_entry(TimerEntry& entry) {
  auto& self = static_cast<DeadlineTimer&>(entry);
  // The wheel's time, not the service's: under LoopWheel it is when the
  // loop's poll returned, so bytes that arrived since then (unread yet) can
  // not make a slot look overdue. See loop_wheel.h, "Stalls".
  self.fire(self.timers().wheel().now());
}

void DeadlineTimer::fire(TimePoint now) {
  if (deadlines_stopped()) return;
  // The entry's tick is still the one it fired for (TimingWheel::deadline_of).
  const TimingWheel& wheel = timers().wheel();
  const TimePoint due = wheel.deadline_of(*this);
  const TickScale scale = wheel.scale();
  on_timer_fired(now > due ? now - due : Duration{0});
  set_flag(detail::DeadlineSet::kOwnerFiring, true);
  // Bounded: a handler that sets the firing slot again at or before `now`
  // gets it at the next expiry (the wheel runs entries re-armed into the
  // past on its next advance), not in an endless loop here.
  for (std::size_t n = 0; !deadlines_stopped() && n < 2 * detail::DeadlineSet::kSlots; ++n) {
    const auto event = set_.take_due(now, scale);
    if (!event) break;
    on_deadline_event(*event, now);
  }
  set_flag(detail::DeadlineSet::kOwnerFiring, false);
  if (!deadlines_stopped()) rearm();
}

void DeadlineTimer::rearm() noexcept {
  if (flag(detail::DeadlineSet::kOwnerFiring)) return;  // fire() re-arms once at the end
  const TimePoint due = set_.next_deadline(scale());
  if (due == armed_for()) return;
  arm(due);
}

void DeadlineTimer::rearm_if_earlier() noexcept {
  if (flag(detail::DeadlineSet::kOwnerFiring)) return;
  const TimePoint due = set_.next_deadline(scale());
  if (due < armed_for()) arm(due);
}

void DeadlineTimer::arm(TimePoint due) noexcept {
  if (due == kNever) {
    timers().cancel(*this);
  } else {
    timers().schedule_at(*this, due);
  }
}

}  // namespace heartwheel::net
