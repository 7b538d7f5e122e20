// heartwheel/http/net_handler.h - serves HTTP on heartwheel::net connections.
//
// What it is
//   A net::Handler that runs one http::Session per net::Connection and maps
//   the session's Transport 1:1 onto the connection: bytes read go to the
//   session, response bytes go to Connection::write, pause/resume to
//   pause_reading/resume_reading, writability to Connection::writable and
//   on_writable, and the session's deadlines to the connection's deadline
//   set. Give one NetHandler to a net::Server, or make one per worker in a
//   runtime::Workers factory (each worker then has its own handler and stats).
//
// Timeouts
//   Every HTTP timeout is a slot of the connection's deadline set, behind the
//   connection's ONE wheel entry (nothing else is armed per connection):
//   header -> header_timeout, body -> body_timeout, keep-alive and first byte
//   -> keepalive_timeout, request -> the request slot (begin_request for the
//   oldest request in flight), send -> the connection's write-stall rule
//   (WritePolicy::stall_timeout: no write progress for that long). on_open
//   gives a connection its own write policy only when SessionOptions::
//   send_timeout differs from the server's stall_timeout (an override costs
//   a small allocation per connection): set the server's stall_timeout to
//   the send timeout, as heartwheel-http does. Closes for write_stall are
//   counted as SessionStats::send_timeouts. Leave the connection's IdlePolicy
//   at zeros: the session's timeouts replace it (an idle slot that fires
//   anyway closes the connection, as for any handler).
//   Under overload (net::ServerOptions::overload) the keep-alive and
//   first-byte waits shrink like the server's idle timeouts: each is scaled
//   when it starts (net::Connection::scale_idle_timeout), so one that started
//   before the pressure keeps its deadline (net/overload.h).
//
// Close reasons
//   The session's reason is the connection's (net::CloseReason):
//   keepalive_timeout, header_timeout, body_timeout, request_timeout,
//   protocol_close (Connection: close, HTTP/1.0, request limit),
//   protocol_error (400, 413, 414, 417, 431), peer_closed, drain, and
//   write_stall from the connection.
//
// Switching protocols
//   A route answers an upgrade request with Responder::upgrade(headers, next)
//   (responder.h). Once the 101 is written, the session is freed (counted in
//   SessionStats::upgrades, not in closed_by_reason), reading resumes and
//   next(conn, rest) runs: it installs the new protocol's handler
//   (Connection::set_handler) and feeds it `rest`, the bytes that followed
//   the request. From then on this handler gets no callback for that
//   connection. ws::NetHandler::upgrade (heartwheel/ws/net_handler.h) does all
//   of it for WebSocket.
//
// Draining
//   net::Server::drain (or runtime::Workers::drain) alone drains HTTP: on_drain
//   closes an idle session at once and lets a busy one finish the requests
//   in flight, the last answer carrying Connection: close, then close.
//
// Single loop, in short:
//   heartwheel::LoopWheel wheel(loop);
//   http::NetHandler http(options, [](const http::Request& req, http::Responder r) {
//     r.respond(200, "hello\n");
//   });
//   net::Server server(wheel, http, server_options);  // idle policy zeros
//   server.listen();  ...  server.drain(10s, done);
// Several threads: see examples/http/main.cpp (runtime::Workers).
//
// Threads: the loop thread of the connections it serves. Lifetime: must
//   outlive the net::Server using it, and be destroyed before the loop's
//   wheel: sessions the server abandoned at its destruction (no on_close) are
//   freed by ~NetHandler, whose pending Responders' on_abandon callbacks may
//   cancel wheel entries.
#pragma once

#include <heartwheel/http/session.h>
#include <heartwheel/net/handler.h>

#include <functional>
#include <memory>
#include <string_view>
#include <system_error>

namespace heartwheel::http {

class NetHandler final : public net::Handler {
 public:
  // Throws std::invalid_argument when options.validate() does.
  NetHandler(SessionOptions options, http::Handler handler);
  ~NetHandler() override;
  NetHandler(const NetHandler&) = delete;
  NetHandler& operator=(const NetHandler&) = delete;

  void on_open(net::Connection& conn) override;
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_writable(net::Connection& conn, bool writable) override;
  void on_eof(net::Connection& conn) override;
  void on_drain(net::Connection& conn) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;

  std::size_t session_count() const noexcept { return count_; }
  const SessionOptions& options() const noexcept { return options_; }

  const SessionStats& stats() const noexcept { return stats_; }
  // Called with the handler's counters whenever a session ends and when the
  // handler is destroyed, on the loop thread: a place to copy them for
  // another thread (under the callee's own lock).
  void set_publisher(std::function<void(const SessionStats&)> publish) {
    publish_ = std::move(publish);
  }

 private:
  struct Conn;
  void forget(Conn* c) noexcept;
  SessionOptions options_;
  http::Handler handler_;
  SessionStats stats_;
  std::function<void(const SessionStats&)> publish_;
  Conn* head_ = nullptr;  // intrusive list of live sessions
  std::size_t count_ = 0;
};

}  // namespace heartwheel::http
