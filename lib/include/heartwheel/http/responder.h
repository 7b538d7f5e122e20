// heartwheel/http/responder.h - the handle a handler answers a request through.
//
// A handler gets one Responder per request and may answer at once or later,
// from any callback on the same loop (a wheel entry, another connection's
// read, ...). Either respond() once, or stream: begin(), write() any number
// of times, end(). The session sends responses strictly in request order: an
// answer to a later pipelined request waits (buffered, up to
// SessionOptions::max_buffered_bytes) until every earlier one is complete.
//
// Ownership: the Responder shares ownership of the exchange (request and
// buffered response), so the Request reference given to the handler stays
// valid while the Responder lives, even after the session closed. The
// Responder is move-only. Destroying it without answering answers 500
// (counted in SessionStats::handler_errors), so a forgotten request cannot
// hang a pipelined connection.
//
// Errors: every call returns false when it did nothing:
//   - the answer can no longer be delivered (active() is false): the session
//     closed, the request timed out (the session answered 503/408), or the
//     call is out of order (write before begin, respond after begin);
//   - respond()/begin() with a status outside 100..599, a header name that is
//     not a token, or a header value with CR, LF or NUL (response splitting):
//     nothing of it is written, the request is answered 500 instead (counted
//     in SessionStats::invalid_responses) and error() says why;
//   - respond()/write() for an answer behind an unfinished earlier one when
//     holding it would pass SessionOptions::max_buffered_bytes: nothing is
//     held (counted in answers_refused), the Responder stays active and
//     error() says why; retry from on_writable, which runs once this answer
//     is the one on the wire.
//
// Backpressure: writable() tells whether a call now goes straight to the
// connection (this answer is on the wire and the connection is below its high
// watermark); on_writable(callback) runs the callback when it becomes so. A
// streaming handler that writes only while writable() never makes a
// connection queue more than its high watermark plus one piece.
//
// Switching protocols (upgrade): a request that asks for another protocol on
// its connection (Upgrade and Connection: upgrade headers, e.g. a WebSocket
// handshake; not CONNECT) may be answered with upgrade(headers, next) instead
// of a response. The session then stops parsing HTTP at that request, keeps
// the bytes that followed it, writes 101 Switching Protocols (in request
// order, like any answer), and hands the connection to `next` with those
// bytes: `next` calls net::Connection::set_handler and feeds them to the new
// protocol (heartwheel/ws/net_handler.h does). Answered with respond() instead
// (a refusal: 400, 403, 426, ...), such a request ends its connection after
// the response (Connection: close).
//
// Threads: the session's loop thread only. Re-entrancy: calls may run inside
// the handler call itself; the session is never destroyed by them. Callbacks
// (on_writable, on_abandon) may run inside another Responder call of the same
// session.
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/common/time.h>
#include <heartwheel/net/deadline.h>
#include <heartwheel/timer/timer_service.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace heartwheel::net {
class Connection;
}

namespace heartwheel::http {

namespace detail {
struct Exchange;
}

// Takes a connection over after a 101 (Responder::upgrade): called once, on
// the loop thread, after the 101 was handed to the connection and the HTTP
// session has let go of it (reading resumed, no HTTP deadline left, no HTTP
// callback any more). `rest` holds the bytes the client sent after the
// request (often empty): the new protocol's first bytes. It must install the
// new protocol's handler (conn.set_handler) and feed it `rest`; an exception
// it throws closes the connection (reason error). Not called when the
// connection closes (or the peer half-closes) before the 101 is written.
using UpgradeHandler = std::function<void(net::Connection& conn, std::string rest)>;

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

  // Switching protocols (see "Switching protocols" above): answers 101 with
  // `headers` (the session adds Connection: Upgrade, Date and Server; no
  // body) and hands the connection to `next` once the 101 is written.
  // Refused (false, nothing written, the request stays unanswered, error()
  // says why): the request did not ask for an upgrade (no Upgrade plus
  // Connection: upgrade headers, or CONNECT); `next` is empty; the session is
  // draining (answer 503 instead). A header respond() would refuse is refused
  // the same way (the request is answered 500).
  bool upgrade(Headers headers, UpgradeHandler next);

  // True when a call now goes straight to the connection: the answer is
  // active, every earlier pipelined answer is complete, and the connection is
  // below its high watermark (net::WritePolicy).
  bool writable() const noexcept;
  // `callback` runs once, when writable() turns true; at once (inside this
  // call) if it is true now. A second call replaces the callback. It does not
  // run once the answer is complete or abandoned (see on_abandon).
  void on_writable(std::function<void()> callback);

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
  // The request's deadline (kNever when the request timeout is off): after it
  // the session answers 503 itself, so long work should stop early.
  TimePoint deadline() const noexcept;
  // Lifts this request's deadline: for a long answer (a stream of events)
  // on a server whose request_timeout bounds how long a client may take to
  // SEND a request. Call it from the handler (the request is complete by
  // then, so a client trickling its request still meets the timeout). The
  // answer's own pace is then bounded by the send timeout (write stall).
  // Requests pipelined behind this one wait for it without a deadline.
  // No-op when inactive.
  void clear_deadline() noexcept;
  // A deadline of the handler's own for this answer, kept in the connection's
  // deadline set (no wheel entry of its own): e.g. a stream that must end when
  // its client's token expires. `slot` passes at `when` (never early, at most
  // a tick late) and `on_passed` runs on the loop thread; it may write and
  // end() this answer. It returns keep (the connection goes on) or close (the
  // session closes the connection once what is written is flushed, with
  // net::close_reason_for(slot): the reason registered with the kind; an
  // answer that ends its connection anyway, HTTP/1.0's, and is ended inside
  // the callback closes with that reason too). A
  // second call replaces the first (kind and callback); `when` == kNever
  // clears it. Cleared when the answer completes; never runs once the answer
  // is inactive.
  // Preconditions: `slot` is a layer's kind (>= net::kLayerDeadlineFirst)
  // registered with its close reason (net/names.h) and not one of HTTP's
  // (deadlines.h); a connection keeps few claimed slots (net/detail/deadline_set.h).
  // Returns false (nothing set) when the answer is inactive or `slot` is
  // HTTP's or net's.
  bool set_deadline(net::Deadline slot, TimePoint when,
                    std::function<net::DeadlineAction()> on_passed);
  // Why the last refused call was refused (see "Errors"); empty if none was.
  const std::string& error() const noexcept;

 private:
  void release() noexcept;
  std::shared_ptr<detail::Exchange> exchange_;
};

}  // namespace heartwheel::http
