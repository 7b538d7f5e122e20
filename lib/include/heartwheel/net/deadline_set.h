// heartwheel/net/deadline_set.h - every deadline of one connection, as plain
// state with time passed in (no socket, no timer, no clock).
//
// One set answers "what is due next" for all of a connection's deadlines
// (see deadline.h). net's own kinds have fixed slots: the idle ones,
// computed from an anchor and the IdlePolicy, max_age from the open time,
// and the absolute request_timeout and write_stall. Every other kind (net's
// PROXY header and heartbeat, and every layer's) is kept in one of
// kClaimedSlots claimed slots, each a kind and a deadline: set() takes a free
// one for a kind that has none, clear() and the kind's event give it back.
// A connection running PROXY -> TLS -> HTTP -> WebSocket holds a handful of
// such deadlines at once (a handshake, one HTTP read phase, a ping and its
// pong, an auth token's expiry beside them), and no layer needs to know the
// others' slots. The owner keeps ONE timer entry armed at next_deadline();
// that is why a connection costs one 32-byte wheel entry however many
// layers and timeouts run on it.
//
// Anchors: each idle slot has an anchor; its event is due at anchor + timeout.
// Activity moves the anchor to `now` (never backwards, so a jittered first
// deadline is not pulled in); an event moves it to the event time, which gives
// Netty's repeat-every-interval behaviour with first == false. Absolute slots
// hold a deadline (kNever = clear); an event clears its slot.
//
// Full: set() of a kind that holds no slot while all kClaimedSlots are taken
// changes nothing and returns false. More layered deadlines at once than the
// set has room for is a programming error; Connection::set_deadline asserts
// and closes the connection (connection.h).
//
// Cost: every operation is O(1) and allocation-free (set() and at() scan the
// kClaimedSlots kinds, next_deadline compares every slot). Size: 112 bytes
// (checked in tests/unit/deadline_set_test.cpp). Threads: the owner's thread
// only.
#pragma once

#include <heartwheel/net/deadline.h>
#include <heartwheel/net/idle_policy.h>
#include <heartwheel/common/time.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace heartwheel::net {

class DeadlineSet {
 public:
  // Claimed slots: deadlines of kinds from kFirstClaimedDeadline on, at once.
  static constexpr std::size_t kClaimedSlots = 6;
  // Every slot: three idle, max_age, request_timeout, write_stall, claimed.
  static constexpr std::size_t kSlots = 6 + kClaimedSlots;

  // Starts at `now` with `policy` (kept by pointer: it must outlive the set
  // or be replaced with set_policy). The first idle deadlines are pushed back
  // by `jitter_offset` (>= 0). Every absolute slot is cleared and every
  // claimed slot freed.
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

  // True for the kinds kept in a claimed slot.
  static constexpr bool is_claimed(Deadline kind) noexcept {
    return kind >= kFirstClaimedDeadline &&
           static_cast<std::size_t>(kind) < kDeadlineCapacity;
  }
  // True for the kinds set(), clear() and at() accept as absolute deadlines:
  // request_timeout, write_stall and the claimed kinds. (The idle slots and
  // max_age follow from the policy.)
  static constexpr bool is_absolute(Deadline kind) noexcept {
    return kind == Deadline::request_timeout || kind == Deadline::write_stall ||
           is_claimed(kind);
  }

  // Sets `kind` to `when`; kNever clears it and frees its claimed slot. A
  // claimed kind without a slot takes a free one. O(1): a scan of the
  // claimed kinds and a store. Precondition: is_absolute(kind).
  // Returns false, changing nothing, when `kind` needs a slot and every
  // claimed slot is taken (never for request_timeout / write_stall, or to
  // clear), or when the precondition does not hold.
  bool set(Deadline kind, TimePoint when) noexcept;
  void clear(Deadline kind) noexcept { set(kind, kNever); }
  // When `kind` is due: the absolute deadline (kNever if it holds no slot),
  // or anchor + timeout for an idle slot, or open + max_age (kNever when off
  // or already fired). Any kind.
  TimePoint at(Deadline kind) const noexcept;
  // Claimed slots in use.
  std::size_t claimed() const noexcept;

  // A request is in flight until end_request(). The request_timeout slot
  // holds its deadline (kNever: in flight without one; drain still waits).
  void begin_request(TimePoint deadline) noexcept {
    request_ = deadline;
    flags_ |= kInRequest;
  }
  void end_request() noexcept {
    request_ = kNever;
    flags_ &= static_cast<std::uint8_t>(~kInRequest);
  }
  bool in_request() const noexcept { return (flags_ & kInRequest) != 0; }

  // The earliest time any slot is due, or kNever.
  TimePoint next_deadline() const noexcept;

  // Takes one due event at `now` and updates the state as if it was
  // delivered; nullopt when nothing (else) is due. Order: write_stall (so
  // write progress counts before write idle is judged), read, write, all
  // idle, request_timeout, the claimed slots by kind number, max_age last.
  std::optional<DeadlineEvent> take_due(TimePoint now) noexcept;

  TimePoint opened_at() const noexcept { return opened_; }
  TimePoint read_anchor() const noexcept { return read_anchor_; }
  TimePoint write_anchor() const noexcept { return write_anchor_; }

 private:
  static constexpr std::uint8_t kFirstRead = 1, kFirstWrite = 2, kFirstAll = 4, kInRequest = 8,
                                kAgeFired = 16;
  // A free claimed slot holds this kind (an idle kind is never claimed) and kNever.
  static constexpr Deadline kFree = Deadline::read_idle;
  TimePoint idle_due(TimePoint anchor, Duration timeout) const noexcept {
    return deadline_after(anchor, timeout);
  }

  const IdlePolicy* policy_ = nullptr;
  TimePoint opened_{};
  TimePoint read_anchor_{};
  TimePoint write_anchor_{};
  TimePoint all_anchor_{};
  TimePoint request_ = kNever;
  TimePoint write_stall_ = kNever;
  std::array<TimePoint, kClaimedSlots> claimed_at_{};
  std::array<Deadline, kClaimedSlots> claimed_kind_{};
  std::uint8_t flags_ = 0;
};

}  // namespace heartwheel::net
