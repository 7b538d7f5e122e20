// A push a DelayedQueue holds: its id and due time, where it waits (the
// ordered index, a claim in flight, a retry on the wheel). Private to
// lib/src/push.
#pragma once

#include <heartwheel/push/delayed_queue.h>

#include <cstdint>
#include <limits>
#include <string>

namespace heartwheel::push {

inline constexpr std::int64_t kNothingLoaded = std::numeric_limits<std::int64_t>::min();

// The entry is armed only while a failed claim waits for its retry; a push
// waiting for its due time is in the queue's ordered index instead.
struct DelayedQueue::Held : TimerEntry {
  enum class State : std::uint8_t {
    waiting,   // in waiting_, by due time
    claiming,  // a claim is in flight: its reply decides
    retrying,  // the entry is armed for the retry of a failed claim
  };
  Held(DelayedQueue& q, std::string push_id, std::int64_t due) noexcept
      : TimerEntry(&DelayedQueue::on_retry_due), queue(q), id(std::move(push_id)), due_us(due) {}
  DelayedQueue& queue;
  std::string id;
  std::int64_t due_us;  // microseconds since the Unix epoch (wall clock)
  State state = State::waiting;
};

namespace detail {
// Due times in Redis: the due set's score is milliseconds with a
// three-digit fraction ("1795461343099.123"; a whole number when the
// microseconds are 0, as older versions stored them). Times before the
// epoch are stored as 0 (due at once).
std::string due_score(std::int64_t due_us);
// A score as Redis prints it back ("1795461343099.123", "1.7e+12"), in
// microseconds; false if it is not a number of the epoch's range.
bool parse_due_score(std::string_view text, std::int64_t& due_us);
// `t` in microseconds since the epoch, rounded up (never early), and back.
std::int64_t to_unix_us_ceil(WallTime t) noexcept;
WallTime from_unix_us(std::int64_t us) noexcept;
}  // namespace detail

}  // namespace heartwheel::push
