// heartwheel/net/idle_tracker.h - the idle bookkeeping of one connection, as
// plain state with time passed in (no socket, no timer, no clock).
//
// One tracker answers "what is due next" for all of a connection's timeouts:
// read idle, write idle, all idle, the request deadline, the maximum age and
// one internal check deadline (used by the write path). The owner keeps ONE
// timer entry armed at next_deadline(); that is why a connection costs one
// 32-byte wheel entry however many timeouts it has.
//
// Anchors: each idle kind has an anchor; its event is due at anchor + timeout.
// Activity moves the anchor to `now` (never backwards, so a jittered first
// deadline is not pulled in); an event moves it to the event time, which gives
// Netty's repeat-every-interval behaviour with first == false.
//
// Cost: every operation is O(1) and allocation-free. Size: 64 bytes.
// Threads: the owner's thread only.
#pragma once

#include <cstdint>
#include <optional>

#include <heartwheel/net/idle_policy.h>
#include <heartwheel/time.h>

namespace heartwheel::net {

class IdleTracker {
 public:
  static constexpr TimePoint kNever = TimePoint::max();

  // Starts tracking at `now` with `policy` (which must outlive the tracker or
  // be replaced with set_policy). The first idle deadlines are pushed back by
  // `jitter_offset` (>= 0).
  void start(const IdlePolicy& policy, TimePoint now,
             Duration jitter_offset = Duration{0}) noexcept;

  // Replaces the policy; anchors and the request deadline are kept.
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

  // A request is in flight until end_request(). `deadline` == kNever: in
  // flight without a deadline (still counts for graceful drain).
  void begin_request(TimePoint deadline) noexcept {
    request_deadline_ = deadline;
    flags_ |= kInRequest;
  }
  void end_request() noexcept {
    request_deadline_ = kNever;
    flags_ &= static_cast<std::uint8_t>(~kInRequest);
  }
  bool in_request() const noexcept { return (flags_ & kInRequest) != 0; }

  // The internal check deadline (kNever = none).
  void set_check_deadline(TimePoint t) noexcept { check_deadline_ = t; }
  TimePoint check_deadline() const noexcept { return check_deadline_; }

  // The earliest time anything is due, or kNever.
  TimePoint next_deadline() const noexcept;

  // Takes one due event at `now` and updates the state as if it was
  // delivered; nullopt when nothing (else) is due. Order: read, write, all,
  // request, max_age. Does not consider the check deadline.
  std::optional<IdleEvent> take_due(TimePoint now) noexcept;

  TimePoint opened_at() const noexcept { return opened_; }
  TimePoint read_anchor() const noexcept { return read_anchor_; }
  TimePoint write_anchor() const noexcept { return write_anchor_; }
  TimePoint request_deadline() const noexcept { return request_deadline_; }

 private:
  static constexpr std::uint8_t kFirstRead = 1, kFirstWrite = 2, kFirstAll = 4, kInRequest = 8,
                                kAgeFired = 16;

  const IdlePolicy* policy_ = nullptr;
  TimePoint opened_{};
  TimePoint read_anchor_{};
  TimePoint write_anchor_{};
  TimePoint all_anchor_{};
  TimePoint request_deadline_ = kNever;
  TimePoint check_deadline_ = kNever;
  std::uint8_t flags_ = 0;
};

}  // namespace heartwheel::net
