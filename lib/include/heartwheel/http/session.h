// heartwheel/http/session.h - one HTTP/1.1 server connection, without I/O.
//
// What it is
//   The protocol state of one server-side connection: it consumes the bytes
//   the peer sent (on_data), parses them with llhttp, calls the handler once
//   per complete request, and hands response bytes to a Transport in request
//   order. It does no I/O and owns no timer: its timeouts are slots of the
//   transport's deadline set (heartwheel/net/deadline.h), which a
//   net::Connection keeps behind its ONE wheel entry. The glue that owns the
//   socket (heartwheel/http/net_handler.h) maps Transport 1:1 onto
//   net::Connection; tests map it onto a net::DeadlineTimer on a
//   ManualTimerService, so the same code runs under hand-advanced time.
//
// Driving a session from memory (tests, fuzzers)
//   Implement Transport (record send(), keep the slots in a
//   net::DeadlineTimer and pass its events to on_deadline), construct a
//   Session, call start(), then any of on_data / on_eof / on_writable /
//   on_deadline / drain. tests/unit/http_memory_transport.h is one such
//   transport (no Catch2 in it), under 100 lines.
//
// Life of a connection
//   start() sets the first-byte deadline. Each request: first byte (request
//   and header deadlines start) -> headers (body deadline starts,
//   100-continue is answered, limits are checked) -> body ->
//   handler(request, responder) -> response bytes -> next request (keep-alive
//   deadline while nothing is in flight). See session_options.h for the table
//   of timeouts and their slots. Up to max_pipelined parsed requests may wait
//   for their answers; beyond that, and while the transport is not writable
//   (backpressure), no new request is parsed and reading pauses
//   (Transport::set_reading(false)) until answers go out. Errors (400, 408,
//   413, 414, 417, 431, 503) are queued in order like any response, carry
//   Connection: close and a short text body, and end the session once written.
//
// Switching protocols
//   A request with Upgrade and Connection: upgrade headers ends the HTTP part
//   of the connection: no request after it is parsed, the bytes that follow
//   it are kept (reading pauses), and the handler answers with respond() (the
//   connection then closes) or Responder::upgrade(). After the 101 is
//   written the session clears its slots, counts SessionStats::upgrades, and
//   at the end of its outermost call hands over through
//   Transport::switch_protocols. closed() is then true and upgraded() too.
//
// Closing
//   The session decides to close once, with a net::CloseReason:
//   kAfterFlush (send what is queued, then close; a quiet keep-alive close has
//   nothing queued; the transport bounds the flush with its write-stall rule)
//   or kAbort (drop what is queued: a timed-out streaming response). After
//   the decision every input is ignored, every slot it set is cleared, every
//   Responder becomes inactive, and each unanswered request's on_abandon runs.
//   The session is never destroyed by its own calls: the owner destroys it
//   after Transport::close (typically from the socket's close callback).
//
// Cost
//   One llhttp parser per session and no timer entry of its own: each phase
//   change stores a slot deadline (plus one O(1) wheel operation when it
//   moves the connection's entry earlier, or on every change under eager
//   refresh). One heap-allocated exchange per request, shared with its
//   Responder. Bytes are parsed in place; only a paused remainder is copied.
//
// Threads: the loop thread only. Distinct sessions: safe.
// Re-entrancy: the handler may answer inside its call, call drain(), or
// answer requests of other sessions. It must not destroy this session.
// Responder callbacks (on_writable) may run inside another Responder call of
// the same session.
#pragma once

#include <heartwheel/http/deadlines.h>
#include <heartwheel/http/message.h>
#include <heartwheel/http/responder.h>
#include <heartwheel/http/session_options.h>
#include <heartwheel/http/session_stats.h>
#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/deadline.h>
#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_service.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::http {

// What the session needs from the connection that carries it: bytes out,
// reading on/off, writability, and the connection's deadline set (the same
// operations net::Connection offers).
class Transport {
 public:
  enum class CloseMode { kAfterFlush, kAbort };
  // Bytes for the peer, in order: `head`, then `body` (either may be empty;
  // a response head and its body come as one call, for one writev). Copied
  // if they cannot be written at once. May report writability
  // (Session::on_writable(false)) from inside; must not call the session
  // otherwise.
  virtual void send(std::string_view head, std::string_view body) = 0;
  // The same with a shared, immutable body (Response::shared_body): a
  // transport that can queue it by reference does (net: Connection::write(
  // head, SharedBytes)); the default sends a view of it, copied if it waits.
  virtual void send_shared(std::string_view head, std::shared_ptr<const std::string> body) {
    send(head, *body);
  }
  // Called once, with the session's reason. kAfterFlush: write what is
  // queued, then close (a stalled peer is the transport's business: its
  // write-stall rule). Must not destroy the session synchronously.
  virtual void close(CloseMode mode, net::CloseReason reason) = 0;
  // Pause (false) or resume (true) delivering on_data; a hint the transport
  // may honour late (bytes that still arrive are buffered by the session).
  virtual void set_reading(bool on) = 0;
  // False above the connection's high watermark until back at its low one
  // (net::Connection::writable). Report the change with Session::on_writable.
  virtual bool writable() const noexcept { return true; }
  // Bytes sent and not yet taken by the kernel (net::Connection::queued_bytes).
  virtual std::size_t queued_bytes() const noexcept { return 0; }
  // Report Session::on_writable(true) once when queued_bytes() reaches 0
  // (net::Connection::notify_when_drained). Called only while bytes are queued.
  virtual void notify_when_drained() {}
  // Call Session::on_writable(true) in a later turn of the event loop, after
  // other connections had theirs (net::Connection::call_next_turn); the
  // session has paused reading meanwhile. False (the default): no turns here,
  // the session goes on at once.
  virtual bool yield_turn() { return false; }

  // The clock deadlines are set against; also handed to handlers
  // (Responder::timers) for answers they give later.
  virtual TimerService& timers() noexcept = 0;
  // Sets or clears (kNever) a protocol slot; the session uses header_timeout,
  // body_timeout and keepalive_timeout. Report the slot passing with
  // Session::on_deadline.
  virtual void set_deadline(net::Deadline slot, TimePoint when) = 0;
  // The request slot: a request is in flight from begin_request until
  // end_request, and request_timeout passes `timeout` from now (0: in flight
  // without a deadline). A second begin_request replaces the deadline.
  virtual void begin_request(Duration timeout) = 0;
  virtual void end_request() = 0;

  // The session switched protocols (Responder::upgrade; the 101 went out
  // through send()): it has cleared its slots and ended the request, and
  // ignores every input from now on. Give the connection to `next` with
  // `rest`, the bytes that followed the request, and resume reading (the
  // session paused it at the upgrade request). Called as the last act of the
  // session's outermost call, so the transport MAY destroy the session
  // inside it. Default (a transport that cannot hand its connection over):
  // close(kAfterFlush, protocol_close).
  virtual void switch_protocols(UpgradeHandler next, std::string rest);

 protected:
  ~Transport() = default;
};

// Called once per complete request; answers through the Responder, now or later.
using Handler = std::function<void(const Request&, Responder)>;

namespace detail {
struct Exchange;
struct Parser;
}  // namespace detail

class Session {
 public:
  // All references must outlive the session. Throws std::invalid_argument
  // when options.validate() does.
  Session(const SessionOptions& options, const Handler& handler, Transport& transport,
          SessionStats& stats);
  // Pending Responders become inactive and their on_abandon callbacks run.
  // Does not call the transport (it may be gone already).
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Sets the first-byte deadline. Call once, when the connection is ready.
  void start();
  // Bytes from the peer. Ignored after close.
  void on_data(std::string_view bytes);
  // The peer will send nothing more: answer what was fully received, then close.
  void on_eof();
  // A slot passed. The session's slots (header, body, keep-alive, request)
  // are handled here (408, 503, quiet close) and give keep; a handler's slot
  // (Responder::set_deadline) runs its callback, which says keep or close
  // (then the session closes after flushing, with close_reason_for(slot));
  // any other slot gives close (the owner closes with
  // net::close_reason_for(slot)).
  net::DeadlineAction on_deadline(net::Deadline slot);
  // The transport's writability changed: reading resumes, and the answer on
  // the wire gets its Responder::on_writable callback.
  void on_writable(bool writable);
  // Graceful shutdown: no new requests; requests in flight are answered with
  // Connection: close, then the session closes (reason drain); an idle
  // session closes now.
  void drain();

  // True once the session ended: it closed, or it switched protocols.
  bool closed() const noexcept { return close_reason_.has_value() || upgraded_; }
  // True once the session handed its connection to another protocol.
  bool upgraded() const noexcept { return upgraded_; }
  // Why the session ended; nullopt while open.
  std::optional<net::CloseReason> close_reason() const noexcept { return close_reason_; }
  std::size_t in_flight() const noexcept { return queue_.size(); }
  // Body bytes of answers held behind an unfinished earlier answer.
  std::size_t buffered_bytes() const noexcept;
  // Bytes allocated for requests read but not parsed yet (waiting for a
  // turn or for the transport to drain); 0 when none wait.
  std::size_t pending_capacity() const noexcept {
    return pending_input_ ? pending_input_->capacity() : 0;
  }
  const SessionStats& stats() const noexcept { return *stats_; }

 private:
  friend struct detail::Parser;
  friend class Responder;
  class Call;
  enum class ReadPhase : std::uint8_t { kNone, kFirstByte, kKeepalive, kHeaders, kBody };

  TimePoint now() noexcept { return transport_->timers().now(); }
  static net::Deadline slot_of(ReadPhase phase) noexcept;

  // reading (session_read.cpp)
  void parse(std::string_view bytes);
  bool may_start_request();
  bool turn_used(std::size_t started, std::chrono::steady_clock::time_point began) const;
  bool yield_turn(const char* rest, const char* end);
  void keep_rest(const char* rest, const char* end);
  std::string& pending();                 // pending_input_, allocated on first use
  bool read_ahead_full() const noexcept;  // more unparsed bytes wait than a turn reads ahead
  void drop_pending() noexcept;
  void pause_with_request_waiting(bool stop_transport = true);
  void maybe_resume_reading();
  void dispatch(const std::shared_ptr<detail::Exchange>& exchange);
  void enter_phase(ReadPhase phase, Duration timeout);
  void enter_phase(ReadPhase phase, Duration timeout, TimePoint from);
  void commit_phase();  // gives the transport read_phase_'s deadline (see enter_phase)
  void enter_idle();
  void on_read_deadline(ReadPhase phase);

  // events from the parser
  void begin_request();
  int headers_complete();  // llhttp return convention
  int body_piece(std::string_view piece);
  void request_complete();

  // answers from Responders (session_answer.cpp)
  bool respond(detail::Exchange& ex, Response response);
  bool begin_stream(detail::Exchange& ex, int status, Headers headers);
  bool write_stream(detail::Exchange& ex, std::string_view piece);
  bool end_stream(detail::Exchange& ex);
  void drop_responder(detail::Exchange& ex);
  bool set_handler_deadline(detail::Exchange& ex, net::Deadline slot, TimePoint when,
                            std::function<net::DeadlineAction()> on_passed);
  void clear_handler_deadline(detail::Exchange& ex) noexcept;
  std::optional<net::DeadlineAction> handler_deadline_passed(net::Deadline slot);
  bool upgrade(detail::Exchange& ex, Headers headers, UpgradeHandler next);
  bool refused(detail::Exchange& ex, int status, const Headers& headers,
               const char* also_wrong = nullptr);
  bool may_hold(detail::Exchange& ex, std::size_t bytes);
  bool writable(const detail::Exchange& ex) const noexcept;
  void notify_writable();

  // writing (session_write.cpp)
  void fail(int status, net::CloseReason reason);
  void answer(detail::Exchange& exchange, Response response, bool close_after);
  void flush();
  void write_head(detail::Exchange& exchange);
  void send(std::string_view bytes);
  void send_continue(detail::Exchange& exchange);
  void finish_exchange();
  void sync_deadlines();
  void sync_request_slot();
  // The one request slot: exchange `seq` (0: none) in flight until
  // `deadline` (kNever: without one). Reaches the transport as the read
  // phase does (commit_request, when the outermost Call ends).
  void time_request(std::uint64_t seq, TimePoint deadline);
  void commit_request();
  // After a change to the read phase or the request slot: commits it now
  // unless an entry point runs (then ~Call does, by commit_deadlines).
  void deadlines_changed();
  void commit_deadlines();  // what changed since the last commit
  void on_request_timeout();
  void close(Transport::CloseMode mode, net::CloseReason reason);
  void abandon_all();
  void begin_upgrade(std::string_view rest);
  void finish_upgrade();
  void hand_off();

  const SessionOptions* options_;
  const Handler* handler_;
  Transport* transport_;
  SessionStats* stats_;
  std::unique_ptr<detail::Parser> parser_;

  // Request order; the front is the answer on the wire. A vector, not a
  // deque: it allocates nothing until the first request (an empty
  // std::deque allocates its map and a first block on every idle connection).
  std::vector<std::shared_ptr<detail::Exchange>> queue_;
  std::shared_ptr<detail::Exchange> receiving_;  // being parsed (also in queue_)
  // Unparsed bytes while reading is paused, from pending_pos_ on (an offset,
  // so that answering a long pipeline a few requests per turn does not copy
  // the rest each time). Allocated only while bytes wait: a pointer is 24
  // bytes less than an empty string in every session.
  std::unique_ptr<std::string> pending_input_;
  std::uint32_t pending_pos_ = 0;
  std::uint32_t requests_ = 0;  // requests begun on this connection (stops at the maximum)
  std::uint64_t next_seq_ = 1;
  std::uint64_t timed_seq_ = 0;  // the exchange the request slot is set for (0: none)
  std::uint16_t in_flush_ = 0;   // flush() nesting (a handler answering inside a flush)
  std::uint16_t calls_ = 0;      // nesting of the session's entry points (Call)
  // The read phase's deadline, given to the transport when the outermost
  // Call ends (commit_phase): a request read whole and answered in one call
  // moves from keep-alive through headers back to keep-alive, and the
  // transport sees only where it ended.
  TimePoint phase_deadline_ = kNever;
  TimePoint timed_deadline_ = kNever;  // timed_seq_'s request deadline
  std::optional<net::CloseReason> close_reason_;
  ReadPhase read_phase_ = ReadPhase::kNone;
  ReadPhase committed_phase_ = ReadPhase::kNone;  // the phase whose slot the transport holds
  bool phase_dirty_ : 1 = false;                  // read_phase_ not committed yet
  bool request_dirty_ : 1 = false;                // timed_seq_ not committed yet
  bool request_committed_ : 1 = false;            // the transport has a request in flight
  bool reading_paused_ : 1 = false;               // pipeline full or transport unwritable
  bool stop_reading_ : 1 = false;                 // no further requests will be parsed
  bool peer_eof_ : 1 = false;
  bool draining_ : 1 = false;
  bool flush_again_ : 1 = false;
  bool awaiting_upgrade_ : 1 = false;  // an upgrade request is parsed; its answer is not out
  bool upgraded_ : 1 = false;          // the 101 went out; the hand-off is due or done
};

}  // namespace heartwheel::http
