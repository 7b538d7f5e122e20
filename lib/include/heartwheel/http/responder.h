// heartwheel/http/responder.h - the handle a handler answers a request through.
//
// A handler gets one Responder per request and may answer at once or later,
// from any callback on the same loop (a wheel entry, another connection's
// read, ...). Either respond() once, or stream: begin(), write() any number
// of times, end(). The session sends responses strictly in request order: an
// answer to a later pipelined request waits (buffered) until every earlier one
// is complete.
//
// Ownership: the Responder shares ownership of the exchange (request and
// buffered response), so the Request reference given to the handler stays
// valid while the Responder lives, even after the session closed. The
// Responder is move-only. Destroying it without answering answers 500
// (counted in SessionStats::handler_errors), so a forgotten request cannot
// hang a pipelined connection.
//
// Every call returns false, and does nothing, when the answer can no longer be
// delivered: the session closed, the request timed out (it was answered with
// 503/408 by the session), or the call is out of order (write before begin).
// Threads: the session's loop thread only. Re-entrancy: calls may run inside
// the handler call itself; the session is never destroyed by them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <heartwheel/http/message.h>
#include <heartwheel/time.h>
#include <heartwheel/timer_service.h>

namespace heartwheel::http {

namespace detail {
struct Exchange;
}

class Responder {
 public:
  Responder() = default;
  explicit Responder(std::shared_ptr<detail::Exchange> exchange) noexcept;
  Responder(Responder&&) noexcept = default;
  Responder& operator=(Responder&& other) noexcept;
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder();

  // A complete response. Content-Length is set by the session.
  bool respond(Response response);
  bool respond(int status, std::string body) {
    return respond(Response::text(status, std::move(body)));
  }

  // Streaming: the head now, the body in pieces (chunked for HTTP/1.1 clients;
  // close-delimited for HTTP/1.0 clients, which then lose keep-alive).
  bool begin(int status, Headers headers = {});
  bool write(std::string_view piece);
  bool end();

  // `callback` runs once if this request can no longer be answered before the
  // handler answered it: the session closed (peer gone, timeout, drain) or
  // the request deadline passed (the session answered 503/408). Use it to
  // cancel work scheduled for the answer, e.g. a wheel entry. It runs on the
  // loop thread, possibly inside the session's close or destructor, so it
  // must not call into the session (Responder calls just return false).
  void on_abandon(std::function<void()> callback);
  // The timer service of the session's loop, for handlers that answer later
  // from a wheel entry; nullptr once inactive.
  TimerService* timers() const noexcept;

  // True while an answer (or the rest of a streamed one) can still be delivered.
  bool active() const noexcept;
  // The request's deadline (TimePoint::max() when the request timeout is off):
  // after it the session answers 503 itself, so long work should stop early.
  TimePoint deadline() const noexcept;

 private:
  void release() noexcept;
  std::shared_ptr<detail::Exchange> exchange_;
};

}  // namespace heartwheel::http
