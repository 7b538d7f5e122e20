// heartwheel/http/net_handler.h - serves HTTP on heartwheel::net connections.
//
// What it is
//   A net::Handler that runs one http::Session per net::Connection: bytes read
//   go to the session, response bytes go to Connection::write, the session's
//   pause/resume map to pause_reading/resume_reading, and its busy state maps
//   to begin_request/end_request so net::Server::drain waits for requests in
//   flight and closes idle keep-alive connections at once.
//   Give one NetHandler to a net::Server, or make one per worker in a
//   net::Workers factory (each worker then has its own handler and stats).
//
// Timeouts
//   Header, body, request and keep-alive timeouts are the session's own wheel
//   entries (the loop's wheel, through Connection::timers()). The send timeout
//   is the connection's write-stall rule (WritePolicy::stall_timeout, same
//   meaning: no write progress for that long), because only the connection
//   sees write progress; closes for write_stall are counted as
//   SessionStats::send_timeouts. Set the connection's IdlePolicy to zeros: the
//   session's timeouts replace it.
//
// Draining
//   Single loop: call drain_sessions() next to net::Server::drain(). Several
//   threads: point SessionOptions::drain_signal at a flag, set it, then call
//   net::Workers::drain(): responses then carry Connection: close.
//
// Single loop, in short:
//   heartwheel::LoopWheel wheel(loop);
//   http::NetHandler http(options, [](const http::Request& req, http::Responder r) {
//     r.respond(200, "hello\n");
//   });
//   net::Server server(wheel, http, server_options);  // idle policy zeros
//   server.listen();  ...  server.drain(10s, done); http.drain_sessions();
// Several threads: see examples/http/main.cpp (net::Workers + drain_signal).
//
// Threads: the loop thread of the connections it serves. Lifetime: must
//   outlive the net::Server using it, and be destroyed before the loop's
//   wheel: sessions the server abandoned at its destruction (no on_close) are
//   freed by ~NetHandler, which cancels their wheel entries.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <system_error>

#include <heartwheel/http/session.h>
#include <heartwheel/net/handler.h>

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
  void on_eof(net::Connection& conn) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;

  // Drains every session of this handler (see Session::drain).
  void drain_sessions();
  std::size_t session_count() const noexcept { return count_; }

  const SessionStats& stats() const noexcept { return stats_; }
  // Called with the handler's counters whenever a session ends and when the
  // handler is destroyed, on the loop thread: a place to copy them for
  // another thread (under the callee's own lock).
  void set_publisher(std::function<void(const SessionStats&)> publish) {
    publish_ = std::move(publish);
  }

 private:
  struct Conn;
  SessionOptions options_;
  http::Handler handler_;
  SessionStats stats_;
  std::function<void(const SessionStats&)> publish_;
  Conn* head_ = nullptr;  // intrusive list of live sessions
  std::size_t count_ = 0;
};

}  // namespace heartwheel::http
