// heartwheel/ws/net_handler.h - WebSocket on heartwheel::net connections:
// the upgrade from HTTP, a ws::Session per connection, heartbeats and the
// close handshake on the connection's deadline slots, shared-frame delivery
// with a slow-consumer policy, and the counters.
//
// What it is
//   A net::Handler for connections that switched from HTTP to WebSocket. An
//   http::NetHandler route hands it the connection:
//
//     struct Echo : ws::Application {
//       void on_message(ws::Connection& c, ws::MessageType t, std::string& m) override {
//         t == ws::MessageType::text ? c.send_text(m) : c.send_binary(m);
//       }
//     } echo;
//     ws::NetHandler ws(ws::NetHandlerOptions{}, echo);
//     http::NetHandler http(http_options, [&](const http::Request& req, http::Responder r) {
//       if (req.path() == "/ws") ws.upgrade(req, std::move(r));   // 101, or the refusal
//       else r.respond(404, "not found\n");
//     });
//     net::Server server(wheel, http, server_options);
//
//   upgrade() runs the handshake (ws::accept_handshake). Refused: the
//   refusal (400/403/405/426) is the answer and the connection closes after
//   it. Accepted: Responder::upgrade; once the 101 is written, the connection
//   is handed here (Connection::set_handler), a ws::Connection is made for it
//   (on_open runs), and the bytes that followed the handshake request in the
//   same read are the first the session sees.
//
// Timing: three slots of the connection's deadline set, no wheel entry of
// its own (the connection's ONE entry covers them):
//   ping          every ping_interval (from the hand-off) the server sends a
//                 ping (or the application one of its own protocol:
//                 Application::send_ping), and moves the slot one interval
//                 on. Centrifugo's 25 s.
//   pong_timeout  set at a ping (unless already set) for pong_timeout later;
//                 ANY byte read clears it (a frame of any kind is life, not
//                 only a pong). When it passes: closed with reason
//                 pong_timeout (counted). Centrifugo's 8 s. A peer that goes
//                 silent is therefore closed at most ping_interval +
//                 pong_timeout (+ one wheel tick) after its last byte, and
//                 never before pong_timeout after a ping it left unanswered.
//   close_timeout set when the server sends close (Connection::close, drain);
//                 when it passes before the peer's close frame arrived, TCP
//                 is closed without waiting (reason close_timeout, counted).
//   After a complete close handshake (or a protocol error: close 1002 / 1007
//   / 1009 sent) the connection closes once its bytes are flushed (reason
//   protocol_close, resp. protocol_error); the connection's write-stall rule
//   bounds that flush. EOF without a close frame: closed at once
//   (peer_closed; Application::on_close sees 1006).
//
// Writes and slow consumers
//   Messages go out through net::Connection::write: at once when the socket
//   takes them, else queued. A shared frame (Connection::deliver: one
//   publication for many subscribers) is queued by reference, never copied.
//   max_queued_bytes bounds each connection's queue: for a shared frame over
//   it, slow_consumer decides: close (default, Centrifugo's behaviour;
//   reason slow_consumer) or skip (uWebSockets' "skip over the backpressure
//   limit"); a message of the connection's own (send_text / send_binary: a
//   reply, an echo) cannot be skipped and closes it. Both are counted
//   (Stats), never silent. Control frames are few by construction: one pong
//   held back at most (session.h, "Pongs"), one close, a ping per
//   ping_interval. So a peer that never reads holds at most max_queued_bytes
//   plus one frame and a few control frames in user space.
//   on_writable(true) also comes when a held-back pong could be sent; the
//   application hears only the watermark crossings.
//
// Draining: on_drain (net::Server::drain) sends close 1001 "going away" and
//   arms the close timeout; the connection then closes with reason drain.
//
// Compression: with handshake.deflate.enabled, upgrade() answers a client's
//   permessage-deflate offer (heartwheel/ws/deflate.h) and the connection's
//   session compresses with the handler's DeflatePool (one per NetHandler,
//   so one per loop: deflate_pool()). A session that inflated its share of
//   a read (DeflateOptions::inflate_budget) waits for a later loop turn
//   (net::Connection::call_next_turn, reading paused meanwhile); an EOF that
//   comes then is handled after the waiting bytes.
//
// Threads: the loop thread of its connections (one NetHandler per loop,
//   e.g. per runtime::Workers worker). Lifetime: must outlive its connections'
//   server and any pending upgrade (upgrade() captures it). If the server is
//   destroyed first (its connections are abandoned without on_close), the
//   NetHandler's destructor calls Application::on_close for each connection
//   it still holds (net reason local, code 1006) and frees them; the
//   Application must still be alive then.
// Re-entrancy: Application callbacks may call any ws::Connection method on
//   any connection of this handler; they must not destroy the handler.
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/http/responder.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/common/time.h>
#include <heartwheel/ws/connection.h>
#include <heartwheel/ws/deadlines.h>
#include <heartwheel/ws/deflate.h>
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/handshake.h>
#include <heartwheel/ws/session.h>
#include <heartwheel/ws/stats.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace heartwheel::ws {

enum class SlowConsumerPolicy : std::uint8_t {
  close,  // close the connection (reason slow_consumer)
  skip,   // leave the frame out for that peer
};

// "close" / "skip".
const char* to_string(SlowConsumerPolicy policy) noexcept;

struct NetHandlerOptions {
  SessionOptions session;      // message size limit (1009 above it), buffers
  HandshakeOptions handshake;  // subprotocols, origin check, compression (deflate)
  // A ping every ping_interval; 0 = the server sends no pings.
  Duration ping_interval = std::chrono::seconds(25);
  // No byte from the peer within this time after a ping: closed (reason
  // pong_timeout). Must be > 0 when pinging.
  Duration pong_timeout = std::chrono::seconds(8);
  // The peer's answer to our close frame is due within this time. > 0.
  Duration close_timeout = std::chrono::seconds(5);
  // Per connection: deliver() applies slow_consumer when a frame would take
  // the queue past this many bytes, and send_text / send_binary close the
  // connection then (an empty queue always takes one frame). 0 = no limit
  // (only the net layer's WritePolicy cap). Centrifugo's client queue limit
  // is 1 MiB.
  std::size_t max_queued_bytes = std::size_t{1} << 20;
  SlowConsumerPolicy slow_consumer = SlowConsumerPolicy::close;
  // Bytes reserved in each ws::Connection's own allocation for the
  // application's per-connection object (Connection::user_storage()): one
  // malloc chunk for both instead of two, and no pointer from one to the
  // other (Connection::from_user_storage). 0 = none. At most 4096.
  std::size_t user_storage_bytes = 0;

  // Throws std::invalid_argument naming the field.
  void validate() const;
};

// How a connection ended, as Application::on_close sees it.
struct CloseInfo {
  // The peer's close code: kCloseNoStatus (1005) for a close frame without
  // one, kCloseAbnormal (1006) when no close frame came at all.
  std::uint16_t code = kCloseAbnormal;
  // The close code we sent (0: none).
  std::uint16_t sent_code = 0;
  // Why the TCP connection closed (protocol_close after a clean handshake,
  // protocol_error, pong_timeout, close_timeout, slow_consumer, peer_closed,
  // drain, write_stall, ...).
  net::CloseReason reason = net::CloseReason::local;
};

// What the application implements.
class Application {
 public:
  // A complete message (see ws::Handler::on_message: `payload` may be moved
  // away).
  virtual void on_message(Connection& conn, MessageType type, std::string& payload) = 0;
  // The connection's queue crossed a watermark (net::WritePolicy).
  virtual void on_writable(Connection& /*conn*/, bool /*writable*/) {}
  // The connection is gone; `conn` is destroyed when this returns. Called
  // exactly once per connection that was opened.
  virtual void on_close(Connection& /*conn*/, const CloseInfo& /*info*/) {}
  // A deadline slot that is not the WebSocket layer's own (ping,
  // pong_timeout, close_timeout) passed: one the application set on
  // conn.net(), or the server's idle policy. Return keep when the
  // application took it over (it may close() with a code of its own);
  // close (the default) closes TCP with close_reason_for(event.kind).
  virtual net::DeadlineAction on_deadline(Connection& /*conn*/, net::DeadlineEvent /*event*/) {
    return net::DeadlineAction::close;
  }
  // The ping slot of an open connection is due (every ping_interval): return
  // true when the application sent a ping of its own protocol instead of a
  // WebSocket ping (Centrifugo's clients expect an empty command, `{}`, which
  // browsers' WebSockets can see and their SDKs answer), false (the
  // default) for the WebSocket ping. Either way the pong timeout runs from
  // here and any byte from the peer ends it.
  virtual bool send_ping(Connection& /*conn*/) { return false; }

 protected:
  ~Application() = default;
};

// Runs once per upgraded connection, before its first bytes are handled:
// where the application makes its per-connection state (in user_storage()).
using OpenHandler = std::function<void(Connection& conn)>;

class NetHandler final : public net::Handler {
 public:
  // Throws std::invalid_argument when options.validate() does.
  NetHandler(NetHandlerOptions options, Application& application);
  ~NetHandler() override;
  NetHandler(const NetHandler&) = delete;
  NetHandler& operator=(const NetHandler&) = delete;

  // In an http::NetHandler route: answers `request` with the handshake's
  // refusal (returns false; counted in handshakes_refused) or switches the
  // connection to WebSocket (returns true; `on_open` runs once the 101 is
  // out). Returns false too when the Responder refused the upgrade (it is
  // then answered 503).
  bool upgrade(const http::Request& request, http::Responder responder, OpenHandler on_open = {});

  // Takes over a connection that already speaks WebSocket (the handshake
  // done elsewhere): as upgrade() does after the 101. `rest` is fed to the
  // session as its first bytes; `deflate` is what the handshake agreed on
  // (enabled needs handshake.deflate.enabled: else std::invalid_argument).
  void attach(net::Connection& conn, std::string_view rest = {}, OpenHandler on_open = {},
              const DeflateParams& deflate = {});

  // net::Handler
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_writable(net::Connection& conn, bool writable) override;
  void on_eof(net::Connection& conn) override;
  void on_drain(net::Connection& conn) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;

  // Calls `f(conn)` for every connection this handler holds, newest first.
  // `f` may send on or close any of them (closes complete later, so none is
  // freed during the walk). O(connections): for rare administration (a
  // server API's "disconnect this user"), not for a hot path.
  template <class F>
  void for_each_connection(F&& f) {
    for (Connection* c = head_; c != nullptr;) {
      Connection* next = c->next_;
      f(*c);
      c = next;
    }
  }

  const NetHandlerOptions& options() const noexcept { return options_; }
  // This loop's compression pool; null unless handshake.deflate.enabled.
  DeflatePool* deflate_pool() const noexcept { return deflate_pool_.get(); }
  const Stats& stats() const noexcept { return stats_; }
  std::size_t connection_count() const noexcept { return count_; }

 private:
  friend class Connection;
  static Connection* of(const net::Connection& conn) noexcept;
  net::DeadlineAction on_ping_due(Connection& c);
  void arm_close_timeout(Connection& c);
  // Clears the ping, pong_timeout and close_timeout slots (the connection is
  // closing: none of them may change its close reason now).
  static void finish_timers(net::Connection& conn) noexcept;
  // Calls Application::on_close, counts, unlinks and frees `c`.
  void finish(Connection& c, net::CloseReason reason);

  void end_of_input(net::Connection& conn) noexcept;

  NetHandlerOptions options_;
  Application& app_;
  Stats stats_;
  std::unique_ptr<DeflatePool> deflate_pool_;
  Connection* head_ = nullptr;  // intrusive list of open connections
  std::size_t count_ = 0;
};

}  // namespace heartwheel::ws
