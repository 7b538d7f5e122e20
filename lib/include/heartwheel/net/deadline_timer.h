// heartwheel/net/deadline_timer.h - a DeadlineSet bound to ONE timer entry.
//
// The base of Connection, usable alone (tests, custom transports). It keeps a
// single 32-byte TimerEntry armed at the set's next deadline (the set's times
// are the wheel's ticks, so the entry's own tick is the armed time):
//   - lazy refresh: note_read()/note_write() only store a timestamp, and a
//     slot moved LATER or cleared only stores its deadline; when the entry
//     fires, due slots are reported and the entry re-arms for what remains.
//     A slot moved EARLIER than the armed time re-arms at once (one O(1)
//     wheel operation, usually a store: see TimingWheel's postpone-in-place).
//   - eager refresh: every change re-arms the entry at the exact new deadline.
// Setting a slot therefore costs what a refresh costs.
//
// Time: stamps and relative timeouts read TimerService::now(); due slots are
// judged at the time the wheel expires at (TimingWheel::now(): under
// LoopWheel, the moment the loop's poll returned), so a connection whose bytes
// wait unread in the kernel is never judged idle past the last poll. See
// loop_wheel.h, "Stalls".
//
// Threads: the TimerService's thread only.
// Re-entrancy: on_deadline_event may call any method, including
// stop_deadlines() and setting the slot that is firing; after
// stop_deadlines() no further event of this round is delivered.
#pragma once

#include <heartwheel/net/detail/deadline_set.h>
#include <heartwheel/timer/timer_entry.h>
#include <heartwheel/timer/timer_service.h>
#include <heartwheel/timer/timing_wheel.h>

namespace heartwheel::net {

class DeadlineTimer : private TimerEntry {
 public:
  DeadlineTimer() noexcept : TimerEntry(&on_entry) {}
  // The owner calls stop_deadlines() in its own destructor (timer_service()
  // is its, and gone by the time this one runs); destroying an armed timer
  // is a programming error (asserted).
  virtual ~DeadlineTimer();

  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

  // Starts tracking now with `policy` (kept by pointer: it must outlive this
  // object or be replaced). First idle deadlines move later by `jitter_offset`.
  void start_deadlines(const IdlePolicy& policy, Duration jitter_offset = Duration{0}) noexcept;
  // Disarms for good; no more events. Idempotent.
  void stop_deadlines() noexcept;
  bool deadlines_stopped() const noexcept { return flag(detail::DeadlineSet::kOwnerStopped); }

  // Replaces the policy (by pointer, as above) and re-arms.
  void set_idle_policy_ref(const IdlePolicy& policy) noexcept;
  // The policy object this timer reads was changed in place (its owner
  // scaled the timeouts): re-arms earlier if a slot is now due sooner than
  // the armed time (eager: re-arms exactly). O(1): a scan of the slots and at
  // most one wheel operation. A later deadline waits for the entry to fire.
  void policy_changed() noexcept;
  const IdlePolicy& idle_policy() const noexcept { return set_.policy(); }

  // Activity, stamped with timers().now(). The I/O hot path.
  void note_read() noexcept {
    const TimerService& t = timers();
    set_.on_read(t.now(), t.wheel().scale());
    if (set_.policy().refresh == RefreshMode::eager) rearm();
  }
  void note_write() noexcept {
    const TimerService& t = timers();
    set_.on_write(t.now(), t.wheel().scale());
    if (set_.policy().refresh == RefreshMode::eager) rearm();
  }

  // Sets an absolute kind (DeadlineSet::is_absolute) to `when`; kNever
  // clears it. False, changing nothing, when the kind needs a claimed slot
  // and none is free (DeadlineSet::set).
  bool set_deadline(Deadline kind, TimePoint when) noexcept;
  // The same, `timeout` from now (saturating; <= 0 clears the slot).
  bool set_timeout(Deadline kind, Duration timeout) noexcept {
    return set_deadline(kind, deadline_after(timers().now(), timeout));
  }
  void clear_deadline(Deadline kind) noexcept { set_deadline(kind, kNever); }
  // When `kind` is due (DeadlineSet::at), on the wheel's tick grid.
  TimePoint deadline(Deadline kind) const noexcept { return set_.at(kind, scale()); }

  // Starts a request: a request_timeout event fires `timeout` from now unless
  // end_request() comes first. A zero timeout marks a request in flight with
  // no deadline (graceful drain waits for it). A second begin_request
  // replaces the first.
  void begin_request(Duration timeout) noexcept;
  void end_request() noexcept;
  bool in_request() const noexcept { return set_.in_request(); }

  TimerService& timers() const noexcept { return timer_service(); }
  const detail::DeadlineSet& deadlines() const noexcept { return set_; }
  // The wheel's grid of ticks, which the set's times are rounded to.
  TickScale scale() const noexcept { return timers().wheel().scale(); }
  // The time the timer is armed for (kNever if none): read from the wheel
  // entry itself (TimingWheel::deadline_of), so it costs no field.
  TimePoint armed_for() const noexcept {
    return armed() ? timers().wheel().deadline_of(*this) : kNever;
  }

 protected:
  // The service the entry lives in. The owner knows it (a connection asks
  // its host), so no timer carries a pointer of its own: 8 bytes per
  // connection (docs/memory.md) for one indirect call per use. The same
  // service for the timer's whole life.
  virtual TimerService& timer_service() const noexcept = 0;
  // One call per due slot, write_stall included, with the time the slot was
  // judged due at. Runs on the timer's thread, from the wheel's expiry
  // (under LoopWheel: the check phase).
  virtual void on_deadline_event(DeadlineEvent event, TimePoint now) = 0;
  // The timer fired `lateness` after the deadline it was armed for, before
  // any event of this round. For statistics.
  virtual void on_timer_fired(Duration /*lateness*/) {}

 private:
  static void on_entry(TimerEntry& entry);
  void fire(TimePoint now);
  void rearm() noexcept;
  void rearm_if_earlier() noexcept;
  void arm(TimePoint due) noexcept;

  bool flag(std::uint8_t bit) const noexcept { return (set_.flags_ & bit) != 0; }
  void set_flag(std::uint8_t bit, bool on) noexcept {
    set_.flags_ = on ? (set_.flags_ | bit) : (set_.flags_ & static_cast<std::uint8_t>(~bit));
  }

  // [[no_unique_address]]: the set's 6 bytes of tail padding hold the
  // owner's first fields (a Connection's host fields: docs/memory.md). The
  // timer's two flags live in the set's flag byte (DeadlineSet::kOwnerFlags).
  [[no_unique_address]] detail::DeadlineSet set_;
};

}  // namespace heartwheel::net
