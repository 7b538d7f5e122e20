// heartwheel/net/server.h - a TCP server on one libuv loop: accepts, tracks
// and closes connections, counts why they closed.
//
// What it owns
//   The listening socket, every accepted Connection (an intrusive list, no
//   container allocation per connection), the statistics. It borrows the
//   loop's LoopWheel (one wheel per loop, shared with anything else on the
//   loop) and the Handler.
//
// Accepting
//   Beyond options.max_connections a new connection is accepted and closed
//   at once (with a reset) and counted as CloseReason::limit. When the process
//   runs out of descriptors (EMFILE/ENFILE), libuv's reserve-fd trick accepts
//   and closes the pending connections so the loop does not spin (the peers
//   see their connection closed). libuv does this silently: those peers never
//   reach the server, so they are not counted; fd_exhausted counts only the
//   EMFILE/ENFILE errors libuv passes on (when its reserve descriptor is
//   gone too). Then libuv would retry the accept at once, forever: so on such
//   an error the server stops listening for accept_pause and listens again on
//   the same port (counted in accept_pauses). To make the limit visible and
//   counted, set max_connections below the descriptor limit.
//
// Draining
//   drain(timeout): stop accepting; tell every connection's handler
//   (Handler::on_drain). By default a connection with no request in flight
//   closes at once after flushing (reason drain); the others close when their
//   request ends and their bytes are flushed. Protocols override on_drain to
//   finish politely (HTTP: Connection: close on the answer in flight;
//   WebSocket: a close frame). The timeout closes whatever is left.
//   `on_drained` runs when the last one closed.
//
// Threads: the loop's thread only (construct, call, destroy). One Server per
//   loop is the normal setup; several work too (they share the wheel).
// Lifetime: destroy on the loop thread. Connections still open are closed
//   without callbacks; their handles finish closing on the next uv_run().
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include <uv.h>

#include <heartwheel/loop_wheel.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/stats.h>

namespace heartwheel::net {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = the kernel picks; read it back with Server::port()
  int backlog = 1024;
  // Own the listening socket with SO_REUSEPORT so several loops (threads or
  // processes) can listen on one port, each with its own wheel.
  bool reuse_port = false;
  std::size_t max_connections = 0;  // 0 = unlimited
  // How long to stop accepting after an EMFILE/ENFILE libuv could not shed.
  // At least 1 ms (validate() rejects less: it is what stops the spin).
  Duration accept_pause = std::chrono::milliseconds(100);
  ConnectionOptions connection;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

class Server final : private detail::ConnectionHost {
 public:
  // Validates `options` (throws std::invalid_argument). Does not listen yet.
  Server(LoopWheel& wheel, Handler& handler, ServerOptions options);
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens. Errors: the libuv error (EADDRINUSE, EACCES, ...) as
  // uv_error(); then nothing is listening.
  std::error_code listen();
  // The bound port (the real one when options.port was 0); 0 before listen().
  int port() const noexcept { return port_; }
  const std::string& host() const noexcept { return options_.host; }

  // See "Draining" above. on_drained may be empty. Calling drain twice keeps
  // the first timeout.
  void drain(Duration timeout, std::function<void()> on_drained = {});
  bool draining() const noexcept { return draining_; }

  // Stops listening and closes every connection now (reason `reason`).
  void close_all(CloseReason reason = CloseReason::local);
  // Stops accepting for good (the listener is closed).
  void stop_listening() noexcept;

  std::size_t connection_count() const noexcept { return count_; }
  // Visits every open connection (do not close connections from `visit`;
  // collect them first).
  void for_each_connection(const std::function<void(Connection&)>& visit);

  const ServerStats& stats() const noexcept { return stats_; }
  const ServerOptions& options() const noexcept { return options_; }
  LoopWheel& wheel() noexcept { return wheel_; }
  uv_loop_t* loop() const noexcept { return wheel_.loop(); }

 private:
  struct Listener;
  const ConnectionOptions& connection_options() const noexcept override {
    return options_.connection;
  }
  NetStats& net_stats() noexcept override { return stats_; }
  TimerService& timer_service() noexcept override { return wheel_; }
  uv_loop_t* host_loop() const noexcept override { return wheel_.loop(); }
  void connection_closed(Connection& conn) noexcept override;
  void request_ended(Connection& conn) noexcept override;
  bool host_draining() const noexcept override { return draining_; }

  static void on_connection(uv_stream_t* listener, int status);
  static void on_drain_timer(uv_timer_t* timer);
  void on_drain_timer_fired();
  static void on_resume_timer(uv_timer_t* timer);
  void pause_accepting() noexcept;
  void close_listener() noexcept;
  void accept_one() noexcept;
  void reject_one() noexcept;
  void drain_connection(Connection& conn) noexcept;
  void check_drained();
  std::error_code start_listener();

  LoopWheel& wheel_;
  Handler& handler_;
  ServerOptions options_;
  ServerStats stats_;
  Listener* listener_ = nullptr;        // heap: libuv needs it until its close callback
  uv_timer_t* drain_timer_ = nullptr;   // heap, same reason
  uv_timer_t* resume_timer_ = nullptr;  // heap, same reason
  Connection* head_ = nullptr;
  std::size_t count_ = 0;
  std::uint64_t next_id_ = 1;
  int port_ = 0;
  bool draining_ = false;
  bool drain_timed_out_ = false;
  std::function<void()> on_drained_;
};

}  // namespace heartwheel::net
