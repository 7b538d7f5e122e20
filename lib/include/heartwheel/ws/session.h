// heartwheel/ws/session.h - one WebSocket connection's protocol, without I/O.
//
// What it is
//   The state machine of one WebSocket connection after the handshake
//   (heartwheel/ws/handshake.h): bytes in (feed), events out (Handler), bytes
//   out (Transport). It reassembles fragmented messages, validates text as
//   UTF-8 as it arrives, enforces the message size limit, answers pings with
//   pongs and a close with a close, and tracks the close handshake. It owns no
//   socket, no timer and no clock, so the same code runs on a net::Connection,
//   in the load harness (Role::client) and in unit tests fed byte by byte.
//
// Life of a session
//   open ---- close() ------------------> closing ---- peer's close --> closed
//     |                                     (the owner's close timeout runs)
//     '---- peer's close: answered -------------------------------------> closed
//     '---- protocol error: close(1002 | 1007 | 1009) sent ------------> closed
//   Entering `closed` calls Transport::close() once. In `closed` every input is
//   ignored and every send returns errc::closed.
//
//   Protocol errors (the session "fails the connection", RFC 6455 7.1.7):
//     1002  any frame rule of heartwheel/ws/frame_parser.h; a close frame with
//           a 1-byte payload or an invalid code (is_valid_close_code)
//     1007  text (or a close reason) that is not UTF-8: at the first invalid
//           byte, even mid-frame, before the rest of the message arrives
//     1009  a frame that would take its message past max_message_bytes: at
//           its header, before any of its payload is buffered; a compressed
//           message, as soon as inflating it passes that many bytes
//     1007  also: a compressed message that is not DEFLATE
//   The session then sends a close frame with that code and an empty reason
//   (unless it had sent one already), calls Handler::on_protocol_error and
//   Transport::close(); it does not wait for the peer's close.
//
//   While `closing` (we sent close), frames are still read (the peer's close
//   is among them, and protocol errors still fail the connection) but
//   nothing the peer says is acted on: complete messages go to
//   Handler::on_discarded instead of on_message, and pings are not answered.
//   A server that closed because of what a peer did (a refused token, an
//   expiry) so never serves it again; a message the peer sent before it saw
//   our close is lost, as RFC 6455 1.4 allows once a close was sent. After
//   the peer's close, nothing more is read.
//
//   Pongs: a ping is answered at once unless Transport::backlogged() says
//   frames sent earlier still wait; then only its payload is kept (the
//   latest ping's: RFC 6455 5.5.3 lets an endpoint answer just the most
//   recent one) and the pong goes out at send_owed_pong(). So a peer that
//   pings and never reads makes the server queue one pong, not one per ping.
//
// Compression (permessage-deflate, RFC 7692; heartwheel/ws/deflate.h)
//   After the handshake agreed on it, use_deflate(params) turns it on: RSV1
//   is accepted on the first frame of a message (never on control or
//   continuation frames: 1002), such messages are inflated as their bytes
//   arrive (the limit counts inflated bytes, UTF-8 is checked on them), and
//   messages sent from DeflateOptions::min_size bytes up are compressed,
//   RSV1 on their frame. Streams come from the transport's DeflatePool (one
//   per loop): without context takeover (the default) an inflate stream is
//   lent for one message and a shared frame is compressed once per pool for
//   all its sessions; a side with context keeps its own stream (our deflate
//   stream; an inflate stream with a 32 KiB window for a peer's context,
//   since zlib cannot hold a peer to a smaller one). Inflating is
//   bounded per feed (DeflateOptions::inflate_budget): past it, at the next
//   frame boundary, the session asks the transport for a later turn
//   (Transport::yield_turn), keeps the rest of the bytes, and goes on in
//   resume(); bytes fed meanwhile wait behind them.
//
// What the owner must do (timeouts are the owner's: the net layer keeps them
// in the connection's deadlines on the loop's wheel)
//   - Feed every byte read, in order, including those that followed the
//     handshake request in the same read.
//   - Implement Transport: write what send() gives, in order; on close(),
//     flush and close the TCP connection (the RFC has the server close TCP
//     first; a client may wait a moment for the server's FIN).
//   - Heartbeat: call ping() on its schedule; any on_pong (or any input)
//     proves the peer alive; close the connection when none comes in time.
//   - Close handshake timeout: after close(), arm a timeout while state() is
//     `closing`; when it fires, close TCP without waiting (report 1006).
//   - Read EOF or a socket error while not `closed`: the connection ended
//     without a close handshake (1006, abnormal); close TCP.
//   - Bound the final flush after Transport::close() (net's write-stall rule).
//   - With compression: a Transport::deflate_pool() that outlives the
//     session; after a yield_turn() that returned true, call resume() on
//     the turn (and stop reading meanwhile, or feed what comes: it waits).
//
// Cost
//   80 bytes per session (x86-64, libstdc++), plus the receive buffer and
//   its std::string (one allocation more) while a message is arriving, plus
//   125 bytes (one allocation, kept) from the first control frame that
//   carries a payload (a close frame with a code, a ping with data; the
//   empty pongs that answer our empty pings allocate nothing), 250 from the
//   first pong held back with a payload. A single-frame message is copied
//   once, from the caller's bytes into the receive buffer (reserved at the
//   frame's header to its exact size, so it never re-grows), and unmasked
//   there; text is validated in the same call. Fragmented messages grow the buffer geometrically. After a
//   message, the buffer is kept if its capacity is at most
//   retained_buffer_bytes, freed otherwise (idle connections hold no buffer).
//   Sending as a server copies nothing: Transport::send gets the header (2-10
//   bytes, on the stack) and the caller's payload as two views. A client's
//   frames are masked into a temporary buffer (one copy, freed after the send).
//   A peer that announces a large frame and sends it slowly pins up to
//   max_message_bytes: that option is also the per-connection memory bound.
//   Compression adds nothing to an idle session (one byte of its padding);
//   while a compressed message arrives it holds a lent inflate stream
//   (~40 KiB, the pool's); a message is inflated into its buffer as it
//   comes, through a 16 KiB stack chunk (and one more for the unmasking).
//
// Threads: the owner's thread only (a loop thread). Distinct sessions: safe.
// Re-entrancy: Handler callbacks may call send*/ping/pong/close on this
// session (echoing from on_message is the normal case) and on other sessions.
// They must not call feed() on this session, nor destroy it; Transport::close
// must not destroy it synchronously either (destroy it from the socket's close
// callback).
#pragma once

#include <heartwheel/ws/deflate.h>
#include <heartwheel/ws/frame.h>
#include <heartwheel/ws/frame_parser.h>
#include <heartwheel/ws/utf8.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::ws {

class Session;
class DeflatePool;
struct DeflateContext;  // lib/src/ws/session_parts.h
namespace detail {
enum class InflateResult : std::uint8_t;  // lib/src/ws/zstream.h
}

enum class MessageType : std::uint8_t { text, binary };

// One SessionOptions is shared (by const reference) by every session of a
// server; it must outlive them.
struct SessionOptions {
  Role role = Role::server;
  // Largest message accepted, summed over its fragments; a frame that would
  // exceed it closes the connection with 1009 at its header.
  std::size_t max_message_bytes = std::size_t{1} << 20;
  // After a message, the receive buffer keeps its memory if its capacity is at
  // most this many bytes; a larger buffer is freed. 0: free every buffer that
  // left the string's inline storage. Raise it for connections that stream
  // many messages; keep it low for many mostly idle ones.
  std::size_t retained_buffer_bytes = 0;
  // Client role only: the masking key of each frame sent. Empty: a per-thread
  // pseudo-random generator seeded once from std::random_device: fast and
  // unpredictable enough for load tests, not cryptographically strong (RFC
  // 6455 10.3 asks browsers for strong keys; plug one in here if it matters).
  // Called on the session's thread.
  std::function<MaskKey()> mask_key_source;

  // Throws std::invalid_argument naming the field when max_message_bytes is 0.
  void validate() const;
};

// What the session tells its owner. Every payload view is valid only during
// the call.
class Handler {
 public:
  // A complete message (all fragments joined and unmasked; text is valid
  // UTF-8). `payload` is the session's receive buffer: read it, or take it
  // with std::move (no copy; the session starts a new buffer).
  virtual void on_message(Session& session, MessageType type, std::string& payload) = 0;
  // A ping arrived. The pong was already sent (unless we had sent close).
  virtual void on_ping(Session& /*session*/, std::string_view /*payload*/) {}
  // A pong arrived, solicited or not.
  virtual void on_pong(Session& /*session*/, std::string_view /*payload*/) {}
  // The peer's close frame arrived: `code` is its code, or kCloseNoStatus
  // (1005) when it carried none. The session already answered it (echoing the
  // code) unless it had sent close first; Transport::close() follows.
  virtual void on_close(Session& /*session*/, std::uint16_t /*code*/, std::string_view /*reason*/) {
  }
  // A complete message that arrived after we sent close: not delivered (see
  // "Life of a session"). `bytes`: its size. For counting.
  virtual void on_discarded(Session& /*session*/, MessageType /*type*/, std::size_t /*bytes*/) {}
  // The peer broke the protocol. The session sent close(`code`: 1002, 1007 or
  // 1009); Transport::close() follows. `what` says what was wrong (for logs;
  // not sent to the peer).
  virtual void on_protocol_error(Session& /*session*/, std::uint16_t /*code*/,
                                 std::string_view /*what*/) {}

 protected:
  ~Handler() = default;
};

// What the session needs from the connection that carries it.
class Transport {
 public:
  // Queue one frame for the peer, in order: `head` (its header) then
  // `payload` (may be empty). Both are valid only during the call: write them
  // now or copy them (net::Connection::write({head, payload}) does both in one
  // writev when the socket takes them).
  virtual void send(std::string_view head, std::string_view payload) = 0;
  // Queue a shared, already encoded frame (Session::send_shared). The
  // transport may keep the reference until the bytes are written instead of
  // copying them. Default: send(*frame, {}).
  virtual void send_shared(const SharedFrame& frame) { send(*frame, {}); }
  // True while frames sent earlier still wait to be written: the session
  // then holds a ping's pong back (see "Pongs" above) until its owner calls
  // Session::send_owed_pong(), which the transport arranges here (e.g. a
  // callback when its queue is empty). Called once per ping while open.
  // Default: false, every ping is answered at once.
  virtual bool backlogged() { return false; }
  // The WebSocket connection is over (close handshake done, or failed): close
  // the TCP connection once what was sent is written. Called once. Must not
  // destroy the session synchronously.
  virtual void close() = 0;
  // The loop's compression pool (heartwheel/ws/deflate_pool.h), needed by a
  // session that use_deflate()s; it must outlive the session. Default: none.
  virtual DeflatePool* deflate_pool() noexcept { return nullptr; }
  // The session inflated its share of this turn: call Session::resume() in
  // a later turn of the loop, after other connections had theirs, and
  // return true (net::Connection::call_next_turn, pausing reads meanwhile).
  // False (the default): no turns here, the session goes on at once.
  virtual bool yield_turn() { return false; }

 protected:
  ~Transport() = default;
};

// What a Session works for: the object that carries its frames (the
// Transport part) and hears its events (the Handler part), one object, so
// the session holds one reference to it (a second cost 8 bytes on every
// WebSocket connection). ws::Connection, ws::Client and heartwheel-load's
// connections are each one.
class SessionOwner : public Transport, public Handler {
 protected:
  ~SessionOwner() = default;
};

class Session {
 public:
  enum class State : std::uint8_t {
    open,     // messages flow both ways
    closing,  // we sent close; waiting for the peer's (arm the close timeout)
    closed,   // close handshake complete or connection failed; Transport::close() was called
  };

  // `owner` (its transport and handler) and `options` must outlive the
  // session. Calls options.validate().
  Session(SessionOwner& owner, const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Compresses from now on as the handshake agreed (ignored when
  // !params.enabled). Call before the first feed(). Throws
  // std::invalid_argument when the transport has no deflate_pool().
  void use_deflate(const DeflateParams& params);
  bool deflating() const noexcept { return deflate_ != 0; }

  // Bytes from the peer, split anywhere. Runs the handler's callbacks for
  // every complete message and control frame in them, in order, and sends
  // pongs / close replies through the transport. Ignored once `closed`.
  // While waiting for a turn (waiting_turn()) the bytes are kept, in order,
  // behind those already waiting.
  void feed(std::string_view bytes);
  // The turn a yield_turn() asked for: goes on with the bytes kept. Does
  // nothing when none are kept.
  void resume();
  // True between a yield_turn() and the resume() that uses up the kept bytes.
  bool waiting_turn() const noexcept;

  // Send one unfragmented message (compressed when deflating and it is
  // worth it). Errors: errc::closed once close was sent (by us or in answer
  // to the peer). Text must be valid UTF-8 (not checked).
  std::error_code send(MessageType type, std::string_view payload);
  std::error_code send_text(std::string_view payload) { return send(MessageType::text, payload); }
  std::error_code send_binary(std::string_view payload) {
    return send(MessageType::binary, payload);
  }
  // Send a frame made by encode_shared (a publication shared by many
  // sessions): handed to Transport::send_shared, no copy. A deflating
  // session without context sends the pool's compressed form instead
  // (DeflatePool::shared: compressed once for every session of the pool);
  // one with context compresses it on its own stream and sends that as its
  // own frame. Errors:
  // errc::closed as send(); errc::invalid_argument for a null frame or in the
  // client role (client frames must be masked, each differently).
  std::error_code send_shared(const SharedFrame& frame);
  // What send_shared would hand to Transport::send_shared for `frame`: the
  // frame, or the pool's compressed form (counted as sent compressed).
  // Null for a session that compresses with its own context (send_shared
  // then sends its own frame). Server role; does not check the state.
  SharedFrame wire_frame(const SharedFrame& frame);

  // Control frames. Errors: errc::closed once close was sent;
  // errc::invalid_argument for a payload above 125 bytes.
  std::error_code ping(std::string_view payload = {});
  std::error_code pong(std::string_view payload = {});  // unsolicited pong: a one-way heartbeat
  // True while a pong is held back (Transport::backlogged was true at the
  // latest ping).
  bool pong_owed() const noexcept { return owed_pong_ != 0; }
  // Sends the pong held back, if any, unless close was sent since (then it
  // is dropped). The owner calls it once what it had queued is written.
  void send_owed_pong();

  // Starts the close handshake: sends close(code, reason) and moves to
  // `closing`; the owner arms its close timeout. The reason is cut to 123
  // bytes on a UTF-8 boundary. Errors: errc::closed if close was already
  // sent; errc::invalid_argument if !is_valid_close_code(code) (1005, 1006
  // and 1015 describe closes, they are never sent; 1012-1014 may be).
  std::error_code close(std::uint16_t code = kCloseNormal, std::string_view reason = {});

  State state() const noexcept { return state_; }
  bool close_sent() const noexcept { return sent_code_ != 0; }
  bool close_received() const noexcept { return received_code_ != 0; }
  // The code we sent (kCloseNoStatus for an empty close), 0 before.
  std::uint16_t sent_close_code() const noexcept { return sent_code_; }
  // The code the peer sent (kCloseNoStatus for an empty close), 0 before.
  std::uint16_t received_close_code() const noexcept { return received_code_; }
  // True if the session failed the connection with a protocol error.
  bool failed() const noexcept { return failed_; }

  Role role() const noexcept { return options_.role; }
  const SessionOptions& options() const noexcept { return options_; }
  // Payload bytes of an incomplete message held in the receive buffer
  // (inflated bytes for a compressed one).
  std::size_t buffered() const noexcept;

 private:
  struct Incoming;  // session_parts.h
  struct Extras;

  void run(std::string_view in);
  void hold(std::string_view rest);
  bool begin_frame();
  bool begin_compressed();
  bool read_payload(std::string_view& in, std::size_t& inflated);
  bool inflate_payload(std::string_view& in, std::size_t& inflated);
  bool judge_inflated(std::size_t start, detail::InflateResult result);
  bool finish_inflating();
  void release_inflater() noexcept;
  void tidy_incoming() noexcept;
  void end_frame();
  void end_message();
  Extras& extras();
  DeflateContext& context();
  std::string_view control_payload() const noexcept;
  void on_close_frame();
  void answer_ping();
  void fail(std::uint16_t code, const char* what);
  void finish();
  void send_frame(Opcode op, std::string_view payload, bool compressed = false);
  void send_message(Opcode op, std::string_view payload);
  void send_shared_compressed(const SharedFrame& frame);
  void send_close(std::uint16_t code, std::string_view payload);

  Transport& transport() const noexcept { return owner_; }
  Handler& handler() const noexcept { return owner_; }
  SessionOwner& owner_;
  const SessionOptions& options_;
  // The message being received (its buffer, handed to on_message, and the
  // inflate stream lent for it), and bytes waiting for a turn: allocated at
  // a message's first frame and freed after on_message (kept, emptied, only
  // when retained_buffer_bytes can hold its buffer). Inline the buffer cost
  // 32 bytes on every connection (docs/memory.md); this way an idle one
  // pays 8, and a message one more small allocation.
  std::unique_ptr<Incoming> message_;
  // A control frame's payload (may interleave fragments): kMaxControlPayload
  // bytes, allocated at the first control frame with a payload, with the
  // payload of a pong held back (see "Pongs") and the streams of a
  // connection with context takeover. Inline the buffer cost 125 bytes on
  // every connection, most of which never see one.
  std::unique_ptr<Extras> extras_;
  // The small fields last: they end the session, so its tail padding is
  // free for ws::Connection's own flags ([[no_unique_address]] there;
  // docs/memory.md).
  FrameParser parser_;
  Utf8Validator utf8_;  // state of the text message being received
  State state_ = State::open;
  bool frame_open_ = false;  // a header was read, its payload is not complete
  bool failed_ = false;
  bool in_feed_ = false;
  std::uint8_t control_size_ = 0;
  std::uint8_t owed_pong_ = 0;  // 0: none; else the held-back pong's payload size + 1
  std::uint16_t sent_code_ = 0;
  std::uint16_t received_code_ = 0;
  // Compression as use_deflate set it: kDeflateOn | kSendContext |
  // kReceiveContext | our window bits (low nibble); 0: off. In the tail
  // padding the session had (its size stays 80).
  std::uint8_t deflate_ = 0;
};

}  // namespace heartwheel::ws
