// See heartwheel/rpc/reply.h. A Reply is a node of its connection's list of
// owed answers; the handler detaches every node when the connection closes,
// so an inactive Reply never touches freed state.
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/rpc/reply.h>

#include <utility>

#include "session.h"

namespace heartwheel::rpc {

Reply::Reply(detail::Session& session, std::uint64_t id) noexcept : session_(&session), id_(id) {
  next_ = session.owed;
  if (next_) next_->prev_ = this;
  session.owed = this;
  ++session.owed_count;
}

Reply::Reply(Reply&& other) noexcept { take_place_of(other); }

Reply& Reply::operator=(Reply&& other) noexcept {
  if (this != &other) {
    Reply dropped(std::move(*this));  // answered "not answered" if still owed
    take_place_of(other);
  }
  return *this;
}

Reply::~Reply() {
  if (!session_) return;
  detail::Session& s = *session_;
  if (s.closed || s.conn->closing()) {  // e.g. destroyed from another Reply's on_abandon
    unlink();
    ++s.owner->stats_.dropped_replies;
    return;
  }
  ++s.owner->stats_.unanswered;
  try {
    answer(false, "request not answered");
  } catch (...) {  // out of memory for the frame: at least leave the list intact
    if (session_) unlink();
  }
}

void Reply::take_place_of(Reply& other) noexcept {
  session_ = std::exchange(other.session_, nullptr);
  id_ = other.id_;
  on_abandon_ = std::move(other.on_abandon_);
  prev_ = std::exchange(other.prev_, nullptr);
  next_ = std::exchange(other.next_, nullptr);
  if (!session_) return;
  if (prev_) {
    prev_->next_ = this;
  } else {
    session_->owed = this;
  }
  if (next_) next_->prev_ = this;
}

void Reply::unlink() noexcept {
  detail::Session& s = *session_;
  if (prev_) {
    prev_->next_ = next_;
  } else {
    s.owed = next_;
  }
  if (next_) next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  --s.owed_count;
  session_ = nullptr;
}

bool Reply::respond(std::string_view payload) { return answer(true, payload); }

bool Reply::fail(std::string_view message) { return answer(false, message); }

bool Reply::active() const noexcept { return session_ && !session_->conn->closing(); }

bool Reply::answer(bool ok, std::string_view payload) {
  // Closing but not closed yet: the answer could not leave; the close
  // abandons this Reply (on_abandon) in a moment.
  if (!active()) return false;
  detail::Session& s = *session_;
  s.owner->answer(s, *this, ok, payload);
  return true;
}

net::Connection* Reply::connection() const noexcept { return session_ ? session_->conn : nullptr; }

void Reply::on_abandon(std::function<void()> callback) {
  if (session_) on_abandon_ = std::move(callback);
}

}  // namespace heartwheel::rpc
