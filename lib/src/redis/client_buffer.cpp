// Commands waiting for a connection (heartwheel/redis/client.h, "While Redis
// is down"). Their deadlines share one wheel entry of the client, armed at
// the earliest: a push arms it only when earlier (one O(1) wheel move); when
// it fires, the due commands fail with timed_out and it re-arms at the next
// (an O(n) pass, only when something timed out). When a connection opens
// the whole buffer is sent, in order, and the entry is cancelled.
#include <heartwheel/common/error.h>

#include <algorithm>

#include "client_core.h"

namespace heartwheel::redis::detail {

void ClientCore::push_buffer(Pending&& p, bool front) {
  buffer_bytes_ += p.keep->size();
  const TimePoint due = p.deadline;
  if (front) {
    buffer_.push_front(std::move(p));
  } else {
    buffer_.push_back(std::move(p));
  }
  if (due < buffer_due_) {
    buffer_due_ = due;
    wheel().schedule_at(buffer_timer_, due);
  }
}

void ClientCore::send_buffer() {
  wheel().cancel(buffer_timer_);
  buffer_due_ = kNever;
  std::deque<Pending> waiting;
  waiting.swap(buffer_);
  buffer_bytes_ = 0;
  for (Pending& p : waiting) {
    Command command = std::move(*p.keep);
    transmit(std::move(p), std::move(command));
  }
}

void ClientCore::BufferTimer::fire(TimerEntry& e) {
  static_cast<BufferTimer&>(e).owner->expire_buffer();
}

void ClientCore::expire_buffer() {
  const TimePoint now = wheel().now();
  buffer_due_ = kNever;
  std::vector<Outcome> outcomes;
  TimePoint next = kNever;
  auto due = [&](Pending& p) {
    if (p.deadline > now) {
      next = std::min(next, p.deadline);
      return false;
    }
    buffer_bytes_ -= p.keep->size();
    ++stats_.timed_out;
    outcomes.push_back({std::move(p.done), heartwheel::errc::timed_out, Reply()});
    return true;
  };
  buffer_.erase(std::remove_if(buffer_.begin(), buffer_.end(), due), buffer_.end());
  if (next != kNever) {
    buffer_due_ = next;
    wheel().schedule_at(buffer_timer_, next);
  }
  run(outcomes);
}

}  // namespace heartwheel::redis::detail
