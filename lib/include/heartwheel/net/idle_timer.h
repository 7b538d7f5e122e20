// heartwheel/net/idle_timer.h - an IdleTracker bound to ONE timer entry.
//
// The base of Connection, usable alone (tests, custom transports). It keeps a
// single 32-byte TimerEntry armed at the tracker's next deadline:
//   - lazy refresh: note_read()/note_write() only store a timestamp; when the
//     entry fires, expired kinds are reported and the entry re-arms for what
//     remains. A deadline that moves EARLIER (begin_request, a new policy)
//     re-arms at once.
//   - eager refresh: every note_* re-arms the entry at the exact new deadline.
// Time is read from the TimerService, so ManualTimerService drives it in
// tests. Under LoopWheel the entry runs in the check phase, after I/O, so a
// loop that stalled while peers kept sending has recorded their reads before
// any idle check (stall-aware expiry).
//
// Baseline backend: use_uv_timer() makes it arm one uv_timer_t of its own
// instead of the wheel entry (libuv's timer heap, run BEFORE I/O polling).
// Kept only to compare against; see examples/echo --timers uv.
//
// Threads: the TimerService's thread only.
// Re-entrancy: on_idle_event/on_check may call any method, including
// stop_idle(); after stop_idle() no further event of this round is delivered.
#pragma once

#include <uv.h>

#include <heartwheel/net/idle_tracker.h>
#include <heartwheel/timer_entry.h>
#include <heartwheel/timer_service.h>

namespace heartwheel::net {

class IdleTimer : private TimerEntry {
 public:
  explicit IdleTimer(TimerService& timers) noexcept : TimerEntry(&on_entry), timers_(&timers) {}
  virtual ~IdleTimer();

  IdleTimer(const IdleTimer&) = delete;
  IdleTimer& operator=(const IdleTimer&) = delete;

  // Starts tracking now with `policy` (kept by pointer: it must outlive this
  // object or be replaced). First deadlines move later by `jitter_offset`.
  void start_idle(const IdlePolicy& policy, Duration jitter_offset = Duration{0}) noexcept;
  // Disarms for good; no more events. Idempotent.
  void stop_idle() noexcept;
  bool idle_stopped() const noexcept { return stopped_; }

  // Replaces the policy (by pointer, as above) and re-arms.
  void set_idle_policy_ref(const IdlePolicy& policy) noexcept;
  const IdlePolicy& idle_policy() const noexcept { return tracker_.policy(); }

  // Activity, stamped with timers().now(). The I/O hot path.
  void note_read() noexcept {
    tracker_.on_read(timers_->now());
    if (tracker_.policy().refresh == RefreshMode::eager) rearm();
  }
  void note_write() noexcept {
    tracker_.on_write(timers_->now());
    if (tracker_.policy().refresh == RefreshMode::eager) rearm();
  }

  // Starts a request: a request_timeout event fires `timeout` from now unless
  // end_request() comes first. A zero timeout marks a request in flight with
  // no deadline (graceful drain waits for it). A second begin_request
  // replaces the first.
  void begin_request(Duration timeout) noexcept;
  void end_request() noexcept;
  bool in_request() const noexcept { return tracker_.in_request(); }

  // Switches to the uv_timer_t baseline backend. Call before start_idle().
  // Returns a libuv error code (0 on success).
  int use_uv_timer(uv_loop_t* loop) noexcept;

  TimerService& timers() const noexcept { return *timers_; }
  const IdleTracker& tracker() const noexcept { return tracker_; }
  // The deadline the timer is armed for (IdleTracker::kNever if none).
  TimePoint armed_for() const noexcept { return armed_for_; }

 protected:
  // One call per due event. Runs on the timer's thread, from the wheel's
  // expiry (check phase) or the baseline's uv_timer_t.
  virtual void on_idle_event(IdleEvent event) = 0;
  // The internal check deadline passed (see set_check_at).
  virtual void on_check(TimePoint /*now*/) {}
  // The timer fired `lateness` after the deadline it was armed for (either
  // backend), before any event of this round. For statistics.
  virtual void on_timer_fired(Duration /*lateness*/) {}
  // Sets the internal check deadline (IdleTracker::kNever clears it).
  void set_check_at(TimePoint when) noexcept;

 private:
  static void on_entry(TimerEntry& entry);
  static void on_uv_timer(uv_timer_t* timer);
  void fire();
  void rearm() noexcept;
  void rearm_if_earlier() noexcept;
  void arm(TimePoint due) noexcept;

  TimerService* timers_;
  IdleTracker tracker_;
  TimePoint armed_for_ = IdleTracker::kNever;
  uv_timer_t* uv_timer_ = nullptr;
  bool stopped_ = false;
  bool firing_ = false;
};

}  // namespace heartwheel::net
