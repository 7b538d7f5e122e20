// See heartwheel/net/deadline_timer.h. The one place where a connection's
// deadlines meet a timer: the wheel entry, or the uv_timer_t baseline.
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/timing_wheel.h>

#include <cassert>

namespace heartwheel::net {

DeadlineTimer::~DeadlineTimer() { stop_deadlines(); }

void DeadlineTimer::start_deadlines(const IdlePolicy& policy, Duration jitter_offset) noexcept {
  stopped_ = false;
  set_.start(policy, timers_->now(), jitter_offset);
  rearm();
}

void DeadlineTimer::stop_deadlines() noexcept {
  stopped_ = true;
  // Only touch the service if armed: a connection may be freed after the
  // wheel (its owner went away first), and then it is never armed.
  if (armed()) timers_->cancel(*this);
  armed_for_ = kNever;
  if (uv_timer_) {
    // The handle outlives us until libuv's close callback frees it.
    uv_timer_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(uv_timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    uv_timer_ = nullptr;
  }
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

void DeadlineTimer::set_deadline(Deadline slot, TimePoint when) noexcept {
  assert(DeadlineSet::is_absolute(slot) && "idle slots follow the IdlePolicy");
  set_.set(slot, when);
  if (stopped_) return;
  // Later or cleared: lazy keeps the armed time (the entry fires, finds the
  // slot not due and re-arms); eager moves the entry now. The entry is never
  // armed later than the set's next deadline, so only a slot set before the
  // armed time can move it: otherwise no scan of the slots, just the store.
  if (set_.policy().refresh == RefreshMode::eager)
    rearm();
  else if (when < armed_for_)
    rearm_if_earlier();
}

void DeadlineTimer::begin_request(Duration timeout) noexcept {
  const TimePoint deadline = deadline_after(timers_->now(), timeout);
  set_.begin_request(deadline);
  if (!stopped_ && deadline < armed_for_) rearm_if_earlier();
}

void DeadlineTimer::end_request() noexcept {
  set_.end_request();
  if (!stopped_ && set_.policy().refresh == RefreshMode::eager) rearm();
}

int DeadlineTimer::use_uv_timer(uv_loop_t* loop) noexcept {
  if (uv_timer_) return 0;
  auto* t = new uv_timer_t;
  const int rc = uv_timer_init(loop, t);
  if (rc < 0) {
    delete t;
    return rc;
  }
  t->data = this;
  uv_timer_ = t;
  return 0;
}

void DeadlineTimer::on_entry(TimerEntry& entry) {
  auto& self = static_cast<DeadlineTimer&>(entry);
  // The wheel's time, not the service's: under LoopWheel it is when the
  // loop's poll returned, so bytes that arrived since then (unread yet) can
  // not make a slot look overdue. See loop_wheel.h, "Stalls".
  self.fire(self.timers_->wheel().now());
}

void DeadlineTimer::on_uv_timer(uv_timer_t* timer) {
  if (timer->data) {
    auto* self = static_cast<DeadlineTimer*>(timer->data);
    self->fire(self->timers_->now());
  }
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
  for (std::size_t n = 0; !stopped_ && n < 2 * kDeadlineCount; ++n) {
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
  if (uv_timer_) {
    if (due == kNever) {
      uv_timer_stop(uv_timer_);
      return;
    }
    const Duration delay = due - timers_->now();
    uv_timer_start(uv_timer_, &on_uv_timer, to_uv_millis_ceil(delay), 0);
    return;
  }
  if (due == kNever) {
    timers_->cancel(*this);
  } else {
    timers_->schedule_at(*this, due);
  }
}

}  // namespace heartwheel::net
