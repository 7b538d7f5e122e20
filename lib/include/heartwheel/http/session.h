// heartwheel/http/session.h - one HTTP/1.1 server connection, without I/O.
//
// What it is
//   The protocol state of one server-side connection: it consumes the bytes
//   the peer sent (on_data), parses them with llhttp, calls the handler once
//   per complete request, and hands response bytes to a Transport in request
//   order. It owns its timeouts as TimerEntries armed in the loop's wheel
//   through a TimerService, so the same code runs on a libuv loop (LoopWheel)
//   and under hand-advanced time in tests (ManualTimerService).
//   It does no I/O itself: the glue that owns the socket (see
//   heartwheel/http/net_handler.h) feeds it and implements Transport.
//
// Life of a connection
//   start() arms the first-byte timeout. Each request: first byte (request and
//   header timeouts start) -> headers (body timeout starts, 100-continue is
//   answered, limits are checked) -> body -> handler(request, responder) ->
//   response bytes -> next request (keep-alive timeout while nothing is in
//   flight). Up to max_pipelined parsed requests may wait for their answers;
//   beyond that, reading pauses (Transport::set_reading(false)) until answers
//   go out. Errors (400, 408, 413, 414, 417, 431, 503) are queued in order like any
//   response, carry Connection: close and a short text body, and end the
//   session once written.
//
// Closing
//   The session decides to close once: kAfterFlush (send what is queued, then
//   close; a quiet keep-alive close has nothing queued) or kAbort (drop what
//   is queued: send timeout, timed-out streaming response). A kAfterFlush
//   whose bytes do not drain within the send timeout is followed by one
//   kAbort. After the decision every input is ignored, every Responder
//   becomes inactive, and each unanswered request's on_abandon runs.
//   The session is never destroyed by its own calls: the owner destroys it
//   after Transport::close (typically from the socket's close callback).
//
// Cost
//   One llhttp parser and three wheel entries per session (read phase,
//   request deadline, send progress); each transition is an O(1) wheel
//   operation. One heap-allocated exchange per request, shared with its
//   Responder. Bytes are parsed in place; only a paused remainder is copied.
//
// Threads: the loop thread only. Distinct sessions: safe.
// Re-entrancy: the handler may answer inside its call, call drain(), or
// answer requests of other sessions. It must not destroy this session.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <heartwheel/http/message.h>
#include <heartwheel/http/responder.h>
#include <heartwheel/http/session_options.h>
#include <heartwheel/http/session_stats.h>
#include <heartwheel/timer_entry.h>
#include <heartwheel/timer_service.h>

namespace heartwheel::http {

// What the session needs from the connection that carries it.
class Transport {
 public:
  enum class CloseMode { kAfterFlush, kAbort };
  // Queue bytes for the peer, in order. Report progress with Session::on_sent.
  virtual void send(std::string bytes) = 0;
  // Called once; a kAfterFlush close may be followed by one kAbort when the
  // send timeout expires while the last bytes are still unsent. Must not
  // destroy the session synchronously.
  virtual void close(CloseMode mode) = 0;
  // Pause (false) or resume (true) delivering on_data; a hint the transport
  // may honour late (bytes that still arrive are buffered by the session).
  virtual void set_reading(bool on) = 0;
  // The session got its first request in flight (true) or answered its last
  // one (false). Lets a server's graceful drain tell busy connections from
  // idle ones. Optional.
  virtual void set_busy(bool /*busy*/) {}

 protected:
  ~Transport() = default;
};

// Called once per complete request; answers through the Responder, now or later.
using Handler = std::function<void(const Request&, Responder)>;

// Why a session ended (for stats and logs).
enum class CloseReason {
  kNone,               // still open
  kPeerClosed,         // EOF from the peer
  kConnectionClose,    // request or response said Connection: close / HTTP/1.0
  kRequestLimit,       // max_requests_per_connection reached
  kKeepaliveTimeout,   // idle between requests
  kFirstByteTimeout,   // never sent a byte
  kHeaderTimeout,
  kBodyTimeout,
  kRequestTimeout,
  kSendTimeout,
  kBadRequest,         // 400, 413, 414, 417, 431
  kDrained,            // server shutdown
};
const char* to_string(CloseReason reason) noexcept;

namespace detail {
struct Exchange;
struct Parser;
}  // namespace detail

class Session {
 public:
  // All references must outlive the session. Throws std::invalid_argument
  // when options.validate() does.
  Session(TimerService& timers, const SessionOptions& options, const Handler& handler,
          Transport& transport, SessionStats& stats);
  // Cancels its entries; pending Responders become inactive and their
  // on_abandon callbacks run.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Arms the first-byte timeout. Call once, when the connection is ready.
  void start();
  // Bytes from the peer. Ignored after close.
  void on_data(std::string_view bytes);
  // The peer will send nothing more: answer what was fully received, then close.
  void on_eof();
  // The transport wrote `bytes` of what send() queued (resets the send timeout).
  void on_sent(std::size_t bytes);
  // Graceful shutdown: no new requests; requests in flight are answered with
  // Connection: close; an idle session closes now.
  void drain();

  bool closed() const noexcept { return close_reason_ != CloseReason::kNone; }
  CloseReason close_reason() const noexcept { return close_reason_; }
  std::size_t in_flight() const noexcept { return queue_.size(); }
  std::size_t unsent_bytes() const noexcept { return unacked_; }
  const SessionStats& stats() const noexcept { return *stats_; }

 private:
  friend struct detail::Parser;
  friend class Responder;
  enum class ReadPhase { kNone, kFirstByte, kKeepalive, kHeaders, kBody };

  // An entry that knows its session: three of them, one per concern.
  struct Timer : TimerEntry {
    Timer(Session* s, Callback cb) noexcept : TimerEntry(cb), owner(s) {}
    Session* owner;
  };

  // parsing (parser.cpp)
  void parse(std::string_view bytes);
  void dispatch(const std::shared_ptr<detail::Exchange>& exchange);
  void resume_reading();

  // events from the parser
  void begin_request();
  int headers_complete();  // llhttp return convention
  int body_piece(std::string_view piece);
  void request_complete();

  // answering and writing (session.cpp)
  void fail(int status, CloseReason reason);
  void answer(detail::Exchange& exchange, Response response, bool close_after);
  void flush();
  void write_head(detail::Exchange& exchange);
  void send(std::string bytes);
  void finish_exchange();
  void close(Transport::CloseMode mode, CloseReason reason);
  void abandon_all();
  void update_timers();
  void enter_idle();
  void send_continue(detail::Exchange& exchange);
  bool drain_signalled() const noexcept {
    return options_->drain_signal != nullptr &&
           options_->drain_signal->load(std::memory_order_relaxed);
  }

  static void on_read_timeout(TimerEntry& e);
  static void on_request_timeout(TimerEntry& e);
  static void on_send_timeout(TimerEntry& e);

  TimerService* timers_;
  const SessionOptions* options_;
  const Handler* handler_;
  Transport* transport_;
  SessionStats* stats_;
  std::unique_ptr<detail::Parser> parser_;

  std::deque<std::shared_ptr<detail::Exchange>> queue_;  // request order
  std::shared_ptr<detail::Exchange> receiving_;  // being parsed (also in queue_)
  std::string pending_input_;    // unparsed bytes while reading is paused
  std::size_t requests_ = 0;     // requests begun on this connection
  std::size_t unacked_ = 0;      // bytes sent to the transport, not yet written
  ReadPhase read_phase_ = ReadPhase::kNone;
  bool reading_paused_ = false;  // pipeline full
  bool stop_reading_ = false;    // no further requests will be parsed
  bool peer_eof_ = false;
  bool draining_ = false;
  bool closing_ = false;         // close(kAfterFlush) requested, bytes may be unsent
  CloseReason close_reason_ = CloseReason::kNone;
  int in_flush_ = 0;             // flush() nesting (a handler answering inside a flush)
  bool flush_again_ = false;
  std::uint64_t next_seq_ = 1;
  std::uint64_t timed_seq_ = 0;  // the exchange request_timer_ is armed for (0: none)

  Timer read_timer_{this, &on_read_timeout};        // first byte, keep-alive, header, body
  Timer request_timer_{this, &on_request_timeout};  // deadline of the oldest request
  Timer send_timer_{this, &on_send_timeout};        // write progress
};

}  // namespace heartwheel::http
