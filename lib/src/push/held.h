// A push in a DelayedQueue's wheel: its entry, its id and due time. Private
// to lib/src/push.
#pragma once

#include <heartwheel/push/delayed_queue.h>

#include <cstdint>
#include <limits>
#include <string>

namespace heartwheel::push {

inline constexpr std::int64_t kNothingLoaded = std::numeric_limits<std::int64_t>::min();

struct DelayedQueue::Held : TimerEntry {
  Held(DelayedQueue& q, std::string push_id, std::int64_t due) noexcept
      : TimerEntry(&DelayedQueue::on_held_due), queue(q), id(std::move(push_id)), due_ms(due) {}
  DelayedQueue& queue;
  std::string id;
  std::int64_t due_ms;
  bool claiming = false;  // a claim is in flight: its reply decides
};

}  // namespace heartwheel::push
