// heartwheel/net/deadline_set.h - every deadline of one connection, as plain
// state with time passed in (no socket, no timer, no clock).
//
// One set answers "what is due next" for all of a connection's slots (see
// deadline.h): the idle slots, computed from an anchor and the IdlePolicy,
// and the absolute slots the layers set (request, header, body, keep-alive,
// ping, pong, close, write stall). The owner keeps ONE timer entry armed at
// next_deadline(); that is why a connection costs one 32-byte wheel entry
// however many protocols and timeouts run on it.
//
// Anchors: each idle slot has an anchor; its event is due at anchor + timeout.
// Activity moves the anchor to `now` (never backwards, so a jittered first
// deadline is not pulled in); an event moves it to the event time, which gives
// Netty's repeat-every-interval behaviour with first == false. Absolute slots
// hold a deadline (kNever = clear); an event clears its slot.
//
// Cost: every operation is O(1) and allocation-free (next_deadline compares
// the 12 slots). Size: 112 bytes. Threads: the owner's thread only.
#pragma once

#include <heartwheel/net/deadline.h>
#include <heartwheel/net/idle_policy.h>
#include <heartwheel/common/time.h>

#include <array>
#include <cstdint>
#include <optional>

namespace heartwheel::net {

class DeadlineSet {
 public:
  // Starts at `now` with `policy` (kept by pointer: it must outlive the set
  // or be replaced with set_policy). The first idle deadlines are pushed back
  // by `jitter_offset` (>= 0). Every absolute slot is cleared.
  void start(const IdlePolicy& policy, TimePoint now,
             Duration jitter_offset = Duration{0}) noexcept;

  // Replaces the policy; anchors and absolute slots are kept.
  void set_policy(const IdlePolicy& policy) noexcept { policy_ = &policy; }
  const IdlePolicy& policy() const noexcept { return *policy_; }

  // Activity. The hot path: two or three stores.
  void on_read(TimePoint now) noexcept {
    if (now > read_anchor_) read_anchor_ = now;
    if (now > all_anchor_) all_anchor_ = now;
    flags_ |= kFirstRead | kFirstAll;
  }
  void on_write(TimePoint now) noexcept {
    if (now > write_anchor_) write_anchor_ = now;
    if (now > all_anchor_) all_anchor_ = now;
    flags_ |= kFirstWrite | kFirstAll;
  }

  // True for the slots set(), clear() and at() accept as absolute deadlines:
  // request_timeout and header_timeout .. write_stall. (The idle slots and
  // max_age follow from the policy.)
  static constexpr bool is_absolute(Deadline slot) noexcept {
    return slot == Deadline::request_timeout || slot >= Deadline::header_timeout;
  }

  // Sets an absolute slot to `when` (kNever clears it). O(1): one store.
  // Precondition: is_absolute(slot).
  void set(Deadline slot, TimePoint when) noexcept { abs_[index(slot)] = when; }
  void clear(Deadline slot) noexcept { set(slot, kNever); }
  // When `slot` is due: the absolute deadline, or anchor + timeout for an idle
  // slot, or open + max_age (kNever when off or already fired).
  TimePoint at(Deadline slot) const noexcept;

  // A request is in flight until end_request(). The request_timeout slot
  // holds its deadline (kNever: in flight without one; drain still waits).
  void begin_request(TimePoint deadline) noexcept {
    set(Deadline::request_timeout, deadline);
    flags_ |= kInRequest;
  }
  void end_request() noexcept {
    clear(Deadline::request_timeout);
    flags_ &= static_cast<std::uint8_t>(~kInRequest);
  }
  bool in_request() const noexcept { return (flags_ & kInRequest) != 0; }

  // The earliest time any slot is due, or kNever.
  TimePoint next_deadline() const noexcept;

  // Takes one due event at `now` and updates the state as if it was
  // delivered; nullopt when nothing (else) is due. Order: write_stall (so
  // write progress counts before write idle is judged), read, write, all
  // idle, then the absolute slots in enum order, max_age last.
  std::optional<DeadlineEvent> take_due(TimePoint now) noexcept;

  TimePoint opened_at() const noexcept { return opened_; }
  TimePoint read_anchor() const noexcept { return read_anchor_; }
  TimePoint write_anchor() const noexcept { return write_anchor_; }

 private:
  static constexpr std::uint8_t kFirstRead = 1, kFirstWrite = 2, kFirstAll = 4, kInRequest = 8,
                                kAgeFired = 16;
  // Absolute slots, stored in enum order after request_timeout.
  static constexpr std::size_t kAbsolute =
      kDeadlineCount - static_cast<std::size_t>(Deadline::header_timeout) + 1;
  static constexpr std::size_t index(Deadline slot) noexcept {
    return slot == Deadline::request_timeout
               ? 0
               : static_cast<std::size_t>(slot) -
                     static_cast<std::size_t>(Deadline::header_timeout) + 1;
  }
  TimePoint idle_due(TimePoint anchor, Duration timeout) const noexcept {
    return deadline_after(anchor, timeout);
  }

  const IdlePolicy* policy_ = nullptr;
  TimePoint opened_{};
  TimePoint read_anchor_{};
  TimePoint write_anchor_{};
  TimePoint all_anchor_{};
  std::array<TimePoint, kAbsolute> abs_{};
  std::uint8_t flags_ = 0;
};

}  // namespace heartwheel::net
