// tools/load/ws_state.h - ws mode's state of one connection (see README.md,
// "ws mode"): the library's WebSocket client protocol on the harness's own
// socket - ws::ClientHandshake until the 101, then a ws::Session in the
// client role (the code ws::Client runs on a net::Connector) - and what the
// run counts. Allocated at the connection's first open and kept across a
// --reconnect, so the offsets it saw survive the new connection; freed with
// the worker.
#pragma once

#include <heartwheel/ws/client_handshake.h>
#include <heartwheel/ws/session.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace heartwheel::load {

struct Conn;

struct WsConn final : ws::SessionOwner {
  explicit WsConn(Conn& c) : conn(&c) {}

  // ws::Transport: frames go out through the harness's write path (TLS
  // too). close() does nothing: the server closes TCP first (RFC 6455
  // 7.1.1), and its FIN ends the connection as in every mode.
  void send(std::string_view head, std::string_view payload) override;
  void close() override {}
  // --ws-compression: the worker's inflate streams (Worker::ws_deflate_pool).
  ws::DeflatePool* deflate_pool() noexcept override;
  // ws::Handler: messages, the server's pings (answered by the session),
  // its close (echoed by the session), protocol errors.
  void on_message(ws::Session& session, ws::MessageType type, std::string& payload) override;
  void on_ping(ws::Session& session, std::string_view payload) override;
  void on_close(ws::Session& session, std::uint16_t code, std::string_view reason) override;
  void on_protocol_error(ws::Session& session, std::uint16_t code, std::string_view what) override;

  Conn* conn;
  std::unique_ptr<ws::ClientHandshake> handshake;  // from the open to the 101
  std::optional<ws::Session> session;              // from the 101 (this connection)
  std::uint64_t base = 0;  // offset of the first subscribe reply: delivery starts after it
  std::uint64_t last = 0;  // highest offset seen (live, recovered or skipped over)
  // When this connection's upgrade request was written. A WebSocket server's
  // ping clock starts at the upgrade and the subscribe after it does not
  // restart it, so a dead connection's close may come up to the upgrade's
  // round trip sooner than T after its last send: the early bound counts
  // from here (Worker::server_closed).
  std::uint64_t upgrade_sent_ns = 0;
  bool upgraded = false;           // the 101 arrived (this connection)
  bool subscribed = false;         // a subscribe reply came (ever): base is valid
  bool drop_planned = false;       // one of the --reconnect fraction
  bool dropped = false;            // dropped for --reconnect (reconnects are not new connections)
  bool reconnect_waiting = false;  // dropped, waiting for --reconnect-delay
  // The server said it restarts (close 1012) on this connection: its end is
  // not a loss, it comes back (Worker::ws_restarting).
  bool restart_closed = false;
  std::uint64_t restart_ns = 0;  // when the latest 1012 came, until the resubscribe reply
};

}  // namespace heartwheel::load
