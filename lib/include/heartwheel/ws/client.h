// heartwheel/ws/client.h - a WebSocket client on the loop's wheel: one
// connection kept to one server, reconnected with backoff, pinged, and its
// opening and closing handshakes bounded by slots of its deadline set.
//
// What it is
//   A Client holds a net::Connector (connect timeout, reconnect with
//   exponential backoff and jitter; TLS through connector.transport, e.g.
//   tls::client_transport(context, "chat.example.com")) and, on each
//   connection it opens, runs the opening handshake (ClientHandshake:
//   key, Sec-WebSocket-Accept check, subprotocol, extensions passed
//   through), then a ws::Session in the client role (frames masked, pongs
//   answered, close handshake, UTF-8 and size checks: session.h). Events go
//   to a ClientHandler.
//
//     struct Chat : ws::ClientHandler {
//       void on_open(ws::Client& c, const ws::ClientHandshake&) override { c.send_text("hi"); }
//       void on_message(ws::Client&, ws::MessageType, std::string& m) override { show(m); }
//     } chat;
//     ws::ClientOptions o;
//     o.address = "127.0.0.1:8000";
//     o.handshake.path = "/connection/websocket";
//     ws::Client client(wheel, chat, o);
//     client.start();
//
// Timing: slots of the connection's deadline set (no wheel entry of its
// own; the Connector keeps one for its backoff and connect timeout):
//   handshake_timeout (ws/deadlines.h) from the connection's open (after TLS)
//                 to the 101; when it passes: closed (reason
//                 handshake_timeout) and retried.
//   ping          every ping_interval the client pings (0: never; a server
//                 that pings, as Centrifugo's and heartwheel-chat's do, is
//                 answered either way).
//   pong_timeout  set at a ping, for pong_timeout later; ANY byte read
//                 clears it. When it passes the connection closes
//                 (pong_timeout): a dead or frozen server is found within
//                 ping_interval + pong_timeout of its last byte, and the
//                 client reconnects.
//   close_timeout set when the client sends close; the server's close (or
//                 its FIN) must come within it, else TCP closes.
// Reconnects: after any close (the server's close frame, a failed
//   handshake, pong_timeout, a reset) the Connector connects again after its
//   backoff, until stop() (or never, with connector.reconnect false). A
//   handshake the server refuses counts as a failed attempt (the backoff
//   grows: a connection closed within stable_after). A server's close 1012
//   ("service restart": a heartwheel server draining once its successor
//   took over, net/restart.h) is a clean close (ClientCloseInfo::
//   server_restart()) and never a failed attempt, however young the
//   connection: the client is back after backoff_initial (jittered).
//
// Cost: sizeof(Client) (printed by tests/unit/memory_budget_test.cpp; the
//   Connector and the session are most of it) plus the open
//   net::Connection; the handshake's state (key, parser) only until the
//   101. Many clients can share one options object and one NetStats (the
//   shared_ptr constructor).
// Threads: the loop's thread only.
// Re-entrancy: handler callbacks may call every method of this client (and
//   of others); they must not destroy it (destroy it from outside its
//   callbacks: an open connection is then abandoned without callbacks).
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/connector.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/ws/client_handshake.h>
#include <heartwheel/ws/session.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::ws {

class Client;

struct ClientOptions {
  // "HOST:PORT" (numeric, or localhost) to connect to.
  std::string address;
  // The upgrade request: path, Host (empty: `address`), subprotocols,
  // extensions, headers.
  ClientHandshakeOptions handshake;
  // Connect timeout, backoff, jitter, local address, TLS (transport). host
  // and port come from `address`.
  net::ConnectorOptions connector;
  // The session: role client (required), max_message_bytes, masks.
  SessionOptions session = client_session_options();
  Duration handshake_timeout = std::chrono::seconds(10);
  Duration ping_interval = std::chrono::seconds(25);  // 0: the client never pings
  Duration pong_timeout = std::chrono::seconds(8);
  Duration close_timeout = std::chrono::seconds(5);

  static SessionOptions client_session_options() {
    SessionOptions s;
    s.role = Role::client;
    return s;
  }
  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

// `o` ready to share between many clients (the shared_ptr constructor):
// connector.host and port from `address`, the Host header from it when
// empty. Throws std::invalid_argument for an address that is not HOST:PORT.
std::shared_ptr<const ClientOptions> shared_client_options(ClientOptions o);

// Why a connection ended (ClientHandler::on_close).
struct ClientCloseInfo {
  // The server's close code; kCloseAbnormal (1006) when the connection
  // ended without one (reset, EOF, pong_timeout, a failed handshake).
  std::uint16_t code = kCloseAbnormal;
  std::string_view reason;      // the server's close reason (valid during the call)
  std::uint16_t sent_code = 0;  // the code we sent, 0 if none
  net::CloseReason net_reason = net::CloseReason::local;
  std::error_code error;  // for net_reason error (and a reset's ECONNRESET)
  bool was_open = false;  // the handshake had succeeded on this connection

  // The server is restarting (close 1012) and asked to be called back: not
  // an error; the client reconnects after backoff_initial unless stopped.
  bool server_restart() const noexcept { return code == kCloseServiceRestart; }
};

class ClientHandler {
 public:
  // The server accepted the handshake (subprotocol, extensions, headers in
  // `handshake`, valid during the call); messages may be sent from here.
  virtual void on_open(Client& /*client*/, const ClientHandshake& /*handshake*/) {}
  // A complete message (as ws::Handler::on_message: take it with std::move).
  virtual void on_message(Client& client, MessageType type, std::string& payload) = 0;
  virtual void on_ping(Client& /*client*/, std::string_view /*payload*/) {}
  virtual void on_pong(Client& /*client*/, std::string_view /*payload*/) {}
  // The server refused the handshake (status, the reason: handshake.error()).
  // The connection closes; on_close follows, then a reconnect unless stopped.
  virtual void on_handshake_failed(Client& /*client*/, const ClientHandshake& /*handshake*/) {}
  // A connection ended (opened or not past the handshake; not called for a
  // failed connect, which the Connector counts and retries).
  virtual void on_close(Client& /*client*/, const ClientCloseInfo& /*info*/) {}

 protected:
  ~ClientHandler() = default;
};

class Client final : private net::Handler, private SessionOwner {
 public:
  // Validates the options (std::invalid_argument). Does not connect yet.
  Client(LoopWheel& wheel, ClientHandler& handler, ClientOptions options);
  // Many clients sharing one options object (shared_client_options) and
  // (optionally) one NetStats.
  Client(LoopWheel& wheel, ClientHandler& handler, std::shared_ptr<const ClientOptions> options,
         net::NetStats* shared_stats = nullptr);
  ~Client() override;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts connecting (now, or after `delay`). No-op if started.
  void start(Duration delay = Duration{0});
  // No more reconnects; an open connection gets close(1000) (the close
  // handshake, bounded by close_timeout), one still in its handshake is
  // closed at once.
  void stop();

  // Messages and pings. Errors: errc::closed when not open (connecting, in
  // the handshake, closing), errc::invalid_argument for a control payload
  // over 125 bytes, errc::limit_reached when the write queue is full (the
  // connection is then closed slow_consumer).
  std::error_code send_text(std::string_view payload);
  std::error_code send_binary(std::string_view payload);
  std::error_code ping(std::string_view payload = {});
  // The close handshake on this connection (the client reconnects after it
  // unless stopped). Errors as Session::close.
  std::error_code close(std::uint16_t code = kCloseNormal, std::string_view reason = {});
  // For fault tests: from now on what the server sends is read and dropped
  // unparsed, and nothing is sent (no pong, no ping, no close) until the
  // connection ends: a frozen or vanished client, as the server sees it.
  void go_silent() noexcept;
  // Resets the TCP connection at once (no close frame, no FIN): a network
  // that vanished. Reconnects after the backoff unless stopped.
  void reset() noexcept;

  // True from the 101 until a close was sent or received.
  bool is_open() const noexcept;
  // The connection (open or in its handshake), or nullptr.
  net::Connection* connection() const noexcept { return conn_; }
  const net::Connector& connector() const noexcept { return connector_; }
  const ClientOptions& options() const noexcept { return *options_; }

  void set_user_data(void* data) noexcept { user_data_ = data; }
  void* user_data() const noexcept { return user_data_; }

 private:
  // net::Handler
  void on_open(net::Connection& conn) override;
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_eof(net::Connection& conn) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;
  // ws::Transport
  void send(std::string_view head, std::string_view payload) override;
  void close() override;
  // ws::Handler
  void on_message(Session& session, MessageType type, std::string& payload) override;
  void on_ping(Session& session, std::string_view payload) override;
  void on_pong(Session& session, std::string_view payload) override;
  void on_close(Session& session, std::uint16_t code, std::string_view reason) override;
  void on_protocol_error(Session& session, std::uint16_t code, std::string_view what) override;

  void handshake_bytes(net::Connection& conn, std::string_view data);
  std::error_code checked(std::error_code ec);

  std::shared_ptr<const ClientOptions> options_;
  ClientHandler* handler_;
  net::Connector connector_;
  net::Connection* conn_ = nullptr;
  std::unique_ptr<ClientHandshake> handshake_;  // from the open to the 101
  std::optional<Session> session_;              // from the 101 to the close
  std::unique_ptr<std::string> close_reason_;   // the server's close reason, if it gave one
  void* user_data_ = nullptr;
  std::uint16_t received_code_ = 0;  // the server's close code on this connection
  bool stopped_ = false;
  bool silent_ = false;
  bool opened_ = false;  // the handshake succeeded on this connection
};

}  // namespace heartwheel::ws
