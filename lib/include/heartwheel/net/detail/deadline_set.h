// heartwheel/net/detail/deadline_set.h - every deadline of one connection, as plain
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
// Time in ticks. The set keeps every time as a 32-bit count of the wheel's
// ticks (TickScale, timer/tick_scale.h) after a per-connection base, so a
// connection's twelve deadlines cost 4 bytes each instead of 8
// (docs/memory.md). Every time going in is rounded UP to a tick: a deadline
// never comes early; it comes at most one tick late, as the wheel's own
// rounding would make it (an idle deadline, anchor + timeout, at most one
// tick late when the timeout is a whole number of ticks, else under two).
// The times that come out (at(), next_deadline(), the anchors) are those
// rounded times, on the tick grid. Each call that converts takes the
// TickScale; the owner passes its wheel's (DeadlineTimer does).
//   The base is the open tick plus kRebaseStep per rebase. A connection that
// lives longer than the 32 bits hold is rebased: when a stamp (activity,
// set(), take_due's `now`) lands 3 * kRebaseStep or more past the base, the
// base moves forward in whole steps to leave it between one and two steps
// behind, and every stored time moves with it (absolute deadlines already
// passed stay due; an anchor older than the new base, at least 2^30 ticks
// behind the stamp, moves up to it: exact for idle timeouts up to 2^30
// ticks whose events fire on time). Absolute deadlines are exact up to
// kFarFirst ticks past the base (so at least 2^30 - 2^26 ticks ahead of the
// last stamp); later ones are kept
// rounded up to 2^22 ticks (never early; late by at most 2^22 ticks, under
// 0.5% of their distance); past 2^48 ticks ahead they are clamped, as the
// wheel clamps (TimingWheel::max_delay). At a 1 ms tick: 2^30 ticks is
// 12.4 days, 2^22 ticks 70 minutes. A connection older than
// 255 * kRebaseStep ticks (8.7 years at 1 ms) reports an open time that
// moves forward with its rebases (max_age: late, never early).
//
// Cost: every operation is O(1) and allocation-free (set() and at() scan the
// kClaimedSlots kinds, next_deadline compares every slot); a stamp is one
// division (TickScale::ceil), a compare and three stores. Size: 72 bytes,
// of which 66 are used: an owner that holds the set [[no_unique_address]]
// keeps its own fields in the last 6 (checked in
// tests/unit/deadline_set_test.cpp). Threads: the owner's thread only.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/net/deadline.h>
#include <heartwheel/net/idle_policy.h>
#include <heartwheel/timer/tick_scale.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace heartwheel::net {
class DeadlineTimer;  // deadline_timer.h: the set's owner
}

namespace heartwheel::net::detail {

class DeadlineSet {
 public:
  // Claimed slots: deadlines of kinds from kFirstClaimedDeadline on, at once.
  static constexpr std::size_t kClaimedSlots = 6;
  // Every slot: three idle, max_age, request_timeout, write_stall, claimed.
  static constexpr std::size_t kSlots = 6 + kClaimedSlots;
  // How far a rebase moves the base, in ticks (see "Time in ticks").
  static constexpr std::uint64_t kRebaseStep = std::uint64_t{1} << 30;

  // Starts at `now` with `policy` (kept by pointer: it must outlive the set
  // or be replaced with set_policy). The first idle deadlines are pushed back
  // by `jitter_offset` (>= 0). Every absolute slot is cleared and every
  // claimed slot freed. Precondition: `now` within 2^48 ticks of the origin.
  void start(const IdlePolicy& policy, TimePoint now, const TickScale& scale,
             Duration jitter_offset = Duration{0}) noexcept;

  // Replaces the policy; anchors and absolute slots are kept.
  void set_policy(const IdlePolicy& policy) noexcept { policy_ = &policy; }
  const IdlePolicy& policy() const noexcept { return *policy_; }

  // Activity. The hot path: a division, a compare and three stores.
  void on_read(TimePoint now, const TickScale& scale) noexcept {
    const std::uint32_t t = stamp(scale.ceil(now));
    if (t > read_) read_ = t;
    if (t > all_) all_ = t;
    flags_ |= kFirstRead | kFirstAll;
  }
  void on_write(TimePoint now, const TickScale& scale) noexcept {
    const std::uint32_t t = stamp(scale.ceil(now));
    if (t > write_) write_ = t;
    if (t > all_) all_ = t;
    flags_ |= kFirstWrite | kFirstAll;
  }

  // True for the kinds kept in a claimed slot.
  static constexpr bool is_claimed(Deadline kind) noexcept {
    return kind >= kFirstClaimedDeadline && static_cast<std::size_t>(kind) < kDeadlineCapacity;
  }
  // True for the kinds set(), clear() and at() accept as absolute deadlines:
  // request_timeout, write_stall and the claimed kinds. (The idle slots and
  // max_age follow from the policy.)
  static constexpr bool is_absolute(Deadline kind) noexcept {
    return kind == Deadline::request_timeout || kind == Deadline::write_stall || is_claimed(kind);
  }

  // Sets `kind` to `when` (rounded up to a tick), `now` being the current
  // time (it may rebase the set); kNever clears it and frees its claimed
  // slot. A claimed kind without a slot takes a free one. O(1): a scan of
  // the claimed kinds and a store. Precondition: is_absolute(kind).
  // Returns false, changing nothing, when `kind` needs a slot and every
  // claimed slot is taken (never for request_timeout / write_stall, or to
  // clear), or when the precondition does not hold.
  bool set(Deadline kind, TimePoint when, TimePoint now, const TickScale& scale) noexcept;
  void clear(Deadline kind) noexcept;
  // When `kind` is due: the absolute deadline (kNever if it holds no slot),
  // or anchor + timeout for an idle slot, or open + max_age (kNever when off
  // or already fired). Any kind.
  TimePoint at(Deadline kind, const TickScale& scale) const noexcept;
  // Claimed slots in use.
  std::size_t claimed() const noexcept;

  // A request is in flight until end_request(). The request_timeout slot
  // holds its deadline (kNever: in flight without one; drain still waits).
  void begin_request(TimePoint deadline, TimePoint now, const TickScale& scale) noexcept {
    set(Deadline::request_timeout, deadline, now, scale);
    flags_ |= kInRequest;
  }
  void end_request() noexcept {
    request_ = kNeverOffset;
    flags_ &= static_cast<std::uint8_t>(~kInRequest);
  }
  bool in_request() const noexcept { return (flags_ & kInRequest) != 0; }

  // The earliest time any slot is due, or kNever.
  TimePoint next_deadline(const TickScale& scale) const noexcept;

  // Takes one due event at `now` and updates the state as if it was
  // delivered; nullopt when nothing (else) is due. Order: write_stall (so
  // write progress counts before write idle is judged), read, write, all
  // idle, request_timeout, the claimed slots by kind number, max_age last.
  std::optional<DeadlineEvent> take_due(TimePoint now, const TickScale& scale) noexcept;

  // The open time and the last activity stamps, rounded up to the tick.
  TimePoint opened_at(const TickScale& scale) const noexcept { return scale.time(opened_); }
  TimePoint read_anchor(const TickScale& scale) const noexcept {
    return scale.time(base() + read_);
  }
  TimePoint write_anchor(const TickScale& scale) const noexcept {
    return scale.time(base() + write_);
  }

 private:
  friend class net::DeadlineTimer;  // keeps its two flags in flags_ (kOwnerFlags)

  static constexpr std::uint8_t kFirstRead = 1, kFirstWrite = 2, kFirstAll = 4, kInRequest = 8,
                                kAgeFired = 16;
  // Bits the owning DeadlineTimer keeps here instead of in a byte of its own.
  static constexpr std::uint8_t kOwnerStopped = 32, kOwnerFiring = 64,
                                kOwnerFlags = kOwnerStopped | kOwnerFiring;
  // A free claimed slot holds this kind (an idle kind is never claimed) and
  // kNeverOffset.
  static constexpr Deadline kFree = Deadline::read_idle;
  // Stored times: offsets from base(). kNeverOffset is "not set"; absolute
  // deadlines from kFarFirst on are far ones, (offset - kFarFirst) << kFarShift
  // ticks after base() + kFarFirst, rounded up.
  static constexpr std::uint32_t kNeverOffset = UINT32_MAX;
  static constexpr std::uint32_t kFarFirst = UINT32_MAX - (std::uint32_t{1} << 26) + 1;
  static constexpr unsigned kFarShift = 22;
  static constexpr std::uint64_t kOpenedMax = (std::uint64_t{1} << 48) - 1;
  static constexpr std::uint64_t kEpochMax = 255;

  std::uint64_t base() const noexcept { return opened_ + epoch_ * kRebaseStep; }
  // The offset of activity at tick `t` (at most kFarFirst - 1), rebasing
  // first when `t` is 3 steps or more past the base.
  std::uint32_t stamp(std::uint64_t t) noexcept {
    const std::uint64_t b = base();
    if (t <= b) return 0;
    if (t - b >= 3 * kRebaseStep) [[unlikely]]
      return rebase(t);
    return static_cast<std::uint32_t>(t - b);
  }
  std::uint32_t rebase(std::uint64_t t) noexcept;  // returns stamp(t) after it
  // An absolute deadline's offset, and back (kNeverTicks <-> kNeverOffset).
  std::uint32_t encode(std::uint64_t ticks) const noexcept;
  std::uint64_t decode(std::uint32_t offset) const noexcept;
  std::uint64_t idle_due(std::uint32_t anchor, Duration timeout,
                         const TickScale& scale) const noexcept;
  std::uint64_t age_due(const TickScale& scale) const noexcept;

  const IdlePolicy* policy_ = nullptr;
  std::uint64_t opened_ : 48 = 0;  // the open tick (moved forward only past kEpochMax)
  std::uint64_t epoch_ : 8 = 0;    // rebases: base() = opened_ + epoch_ * kRebaseStep
  std::uint64_t flags_ : 8 = 0;
  std::uint32_t read_ = 0, write_ = 0, all_ = 0;  // anchors
  std::uint32_t request_ = kNeverOffset;
  std::uint32_t write_stall_ = kNeverOffset;
  std::array<std::uint32_t, kClaimedSlots> claimed_at_{};
  std::array<Deadline, kClaimedSlots> claimed_kind_{};
};

}  // namespace heartwheel::net::detail
