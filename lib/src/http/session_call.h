// Session::Call: marks one of the session's entry points (private to
// lib/src/http). Bytes, EOF, deadlines, writability, drain and every
// Responder call open one; the outermost one, when it returns, runs a due
// hand-off (switching protocols). The transport may destroy the session in
// that hand-off, so the hand-off is the very last thing the session does:
// nothing of it runs after an outermost Call ends. Before it, the read
// phase's deadline and the request slot reach the transport
// (Session::commit_deadlines).
#pragma once

#include <heartwheel/http/session.h>

#include "exchange.h"

namespace heartwheel::http {

class Session::Call {
 public:
  explicit Call(Session& session) noexcept : session_(session) { ++session_.calls_; }
  ~Call() {
    if (--session_.calls_ != 0) return;
    session_.commit_deadlines();
    if (session_.upgraded_ && !session_.queue_.empty()) session_.hand_off();
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

 private:
  Session& session_;
};

}  // namespace heartwheel::http
