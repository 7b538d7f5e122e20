// See heartwheel/net/idle_timer.h. The one place where a connection's
// deadlines meet a timer: the wheel entry, or the uv_timer_t baseline.
#include <heartwheel/net/idle_timer.h>

namespace heartwheel::net {

IdleTimer::~IdleTimer() { stop_idle(); }

void IdleTimer::start_idle(const IdlePolicy& policy, Duration jitter_offset) noexcept {
  stopped_ = false;
  tracker_.start(policy, timers_->now(), jitter_offset);
  rearm();
}

void IdleTimer::stop_idle() noexcept {
  stopped_ = true;
  // Only touch the service if armed: a connection may be freed after the
  // wheel (its owner went away first), and then it is never armed.
  if (armed()) timers_->cancel(*this);
  armed_for_ = IdleTracker::kNever;
  if (uv_timer_) {
    // The handle outlives us until libuv's close callback frees it.
    uv_timer_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(uv_timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    uv_timer_ = nullptr;
  }
}

void IdleTimer::set_idle_policy_ref(const IdlePolicy& policy) noexcept {
  tracker_.set_policy(policy);
  if (!stopped_) rearm();
}

void IdleTimer::begin_request(Duration timeout) noexcept {
  tracker_.begin_request(timeout.count() > 0 ? timers_->now() + timeout : IdleTracker::kNever);
  if (!stopped_) rearm_if_earlier();
}

void IdleTimer::end_request() noexcept {
  tracker_.end_request();
  // Lazy: the entry may fire at the old deadline and find nothing due. Eager:
  // move it now.
  if (!stopped_ && tracker_.policy().refresh == RefreshMode::eager) rearm();
}

void IdleTimer::set_check_at(TimePoint when) noexcept {
  tracker_.set_check_deadline(when);
  if (!stopped_) rearm_if_earlier();
}

int IdleTimer::use_uv_timer(uv_loop_t* loop) noexcept {
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

void IdleTimer::on_entry(TimerEntry& entry) { static_cast<IdleTimer&>(entry).fire(); }

void IdleTimer::on_uv_timer(uv_timer_t* timer) {
  if (timer->data) static_cast<IdleTimer*>(timer->data)->fire();
}

void IdleTimer::fire() {
  const TimePoint due = armed_for_;
  armed_for_ = IdleTracker::kNever;
  if (stopped_) return;
  const TimePoint now = timers_->now();
  if (due != IdleTracker::kNever) on_timer_fired(now > due ? now - due : Duration{0});
  firing_ = true;
  if (now >= tracker_.check_deadline()) {
    tracker_.set_check_deadline(IdleTracker::kNever);
    on_check(now);
  }
  while (!stopped_) {
    const auto event = tracker_.take_due(now);
    if (!event) break;
    on_idle_event(*event);
  }
  firing_ = false;
  if (!stopped_) rearm();
}

void IdleTimer::rearm() noexcept {
  if (firing_) return;  // fire() re-arms once at the end
  const TimePoint due = tracker_.next_deadline();
  if (due == armed_for_) return;
  arm(due);
}

void IdleTimer::rearm_if_earlier() noexcept {
  if (firing_) return;
  const TimePoint due = tracker_.next_deadline();
  if (due < armed_for_) arm(due);
}

void IdleTimer::arm(TimePoint due) noexcept {
  armed_for_ = due;
  if (uv_timer_) {
    if (due == IdleTracker::kNever) {
      uv_timer_stop(uv_timer_);
      return;
    }
    const Duration delay = due - timers_->now();
    uv_timer_start(uv_timer_, &on_uv_timer, to_uv_millis_ceil(delay), 0);
    return;
  }
  if (due == IdleTracker::kNever) {
    timers_->cancel(*this);
  } else {
    timers_->schedule_at(*this, due);
  }
}

}  // namespace heartwheel::net
