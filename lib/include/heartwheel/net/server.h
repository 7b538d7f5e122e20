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
//   At most accept_batch connections are accepted per loop turn; the rest
//   wait in the kernel's listen queue until the next turn. Without the bound
//   libuv accepts until the queue is empty, and a flood of new connections
//   (each arriving with requests to answer) fills one turn with their work
//   while the open connections' requests wait behind it (a flood of slow
//   readers against a normal client: docs/BENCHMARKS.md, "slowhttptest"). nginx (multi_accept off) takes one per event, Netty 16
//   per read. Each turn that used up its budget is counted in
//   accept_deferrals.
//
// Protection (each off by default; see the headers named)
//   - PROXY protocol (proxy_protocol.h, connection.h): behind HAProxy and
//     the like every connection must start with a PROXY header, read within
//     proxy_header_timeout; its client address is the one used everywhere
//     (handlers, the per-address limit). Refused headers are counted
//     (NetStats::proxy, closed_by_reason proxy_header_invalid/_timeout).
//   - Per-address limit (ip_limiter.h): at most max_connections_per_ip
//     connections per client address; more are reset at once (ip_limit).
//   - Overload (overload.h): idle timeouts that shrink with the number of
//     open connections (and memory), and at max_connections the idlest
//     connection dropped (reason overload) to admit the new one. Both keep
//     the connections in order of their last read (ActivityList): a compare
//     per read and a list move at most once per connection per
//     activity_granularity.
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

#include <heartwheel/common/cidr_set.h>
#include <heartwheel/net/activity_list.h>
#include <heartwheel/net/byte_stage.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/detail/connection_host.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/overload.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/timer/timer_entry.h>
#include <uv.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

namespace heartwheel::net {

namespace detail {
class IpLimiter;  // heartwheel/net/detail/ip_limiter.h
}

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = the kernel picks; read it back with Server::port()
  int backlog = 1024;
  // Own the listening socket with SO_REUSEPORT so several loops (threads or
  // processes) can listen on one port, each with its own wheel.
  bool reuse_port = false;
  // A socket already bound (and maybe listening) to adopt instead of opening
  // one: a listener inherited from the process this one replaces
  // (net/restart.h). host and port are then only what is reported; the
  // server owns the descriptor from listen() on. -1: open one.
  int listen_fd = -1;
  std::size_t max_connections = 0;  // 0 = unlimited
  // How long to stop accepting after an EMFILE/ENFILE libuv could not shed.
  // At least 1 ms (validate() rejects less: it is what stops the spin).
  Duration accept_pause = std::chrono::milliseconds(100);
  // Connections accepted per loop turn at most ("Accepting" above); 0 = as
  // many as the kernel has queued.
  std::size_t accept_batch = 16;
  // Connections called back per loop turn at most after they yielded
  // (Connection::call_next_turn; HTTP after SessionOptions::pipeline_burst
  // pipelined requests); the rest keep their place in line. 0 = every one
  // queued when the turn began.
  std::size_t resume_batch = 32;
  ConnectionOptions connection;

  // PROXY protocol: every connection must start with a PROXY header (v1 or
  // v2, never guessed), complete within proxy_header_timeout (> 0) or closed
  // as proxy_header_timeout; malformed: proxy_header_invalid. See
  // connection.h, "PROXY protocol".
  bool proxy_protocol = false;
  Duration proxy_header_timeout = std::chrono::seconds(5);
  // The sources PROXY headers are believed from (the load balancers). Not
  // empty: a connection whose socket peer is outside the set is reset at
  // accept as proxy_untrusted (NetStats::proxy.untrusted), header or not,
  // before any byte is read. Empty (the default): every peer is believed, so
  // anyone who can reach the port can claim any client address. Needs
  // proxy_protocol.
  CidrSet proxy_protocol_from;
  // A transport every connection runs through (byte_stage.h), after the
  // PROXY header: TLS (heartwheel/tls/net_transport.h). Null: plain.
  std::shared_ptr<ByteStageFactory> transport;
  // Open connections per client address; 0 = no limit. Counted in
  // `ip_limiter` when set (internal, detail/ip_limiter.h: servers that share
  // one count once; runtime::Workers gives its servers one), else in the
  // server's own. Over it: reset at once (ip_limit).
  std::size_t max_connections_per_ip = 0;
  std::shared_ptr<detail::IpLimiter> ip_limiter;
  // Scaled idle timeouts and dropping the idlest at max_connections.
  OverloadOptions overload;

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
  // The listening socket's descriptor; -1 when not listening. The server
  // keeps owning it (a restart passes a copy to its successor).
  int listen_fd() const noexcept;
  const std::string& host() const noexcept { return options_.host; }

  // See "Draining" above. on_drained may be empty. Calling drain twice keeps
  // the first timeout.
  // With spread > 0 the handlers are told (on_drain) gradually instead of
  // all at once: in equal parts over `spread`, in the connections' order
  // when the drain began, so that a restart's clients come back to the
  // successor spread over the window, not in one storm. Whatever is still
  // open at `timeout` is closed (reason drain) as without it. Cost while
  // spreading: a 10 ms timer and a vector and a set of the connections.
  void drain(Duration timeout, std::function<void()> on_drained = {}, Duration spread = {});
  bool draining() const noexcept { return draining_; }

  // Stops listening and closes every connection now (reason `reason`).
  void close_all(CloseReason reason = CloseReason::local);
  // Stops accepting for good (the listener is closed).
  void stop_listening() noexcept;

  std::size_t connection_count() const noexcept { return list_.size(); }
  // Visits every open connection (do not close connections from `visit`;
  // collect them first).
  void for_each_connection(const std::function<void(Connection&)>& visit);

  const ServerStats& stats() const noexcept { return stats_; }
  // The idle timeouts in force (options().connection.idle scaled by the
  // current pressure; overload.h).
  const IdlePolicy& idle_policy() const noexcept { return effective_.idle; }
  // The per-address counts (nullptr without a per-address limit).
  const detail::IpLimiter* ip_limiter() const noexcept { return limiter_.get(); }
  const ServerOptions& options() const noexcept { return options_; }
  LoopWheel& wheel() noexcept { return wheel_; }
  uv_loop_t* loop() const noexcept { return wheel_.loop(); }

 private:
  struct Listener;
  // The overload sweeper: one wheel entry of the server (overload.h).
  struct Sweeper final : TimerEntry {
    explicit Sweeper(Server& s) noexcept : TimerEntry(&on_sweep), owner(&s) {}
    static void on_sweep(TimerEntry& entry);
    Server* owner;
  };
  // What connections read: options_.connection with the idle timeouts
  // scaled (changed in place when the pressure moves).
  const ConnectionOptions& connection_options() const noexcept override { return effective_; }
  NetStats& net_stats() noexcept override { return stats_; }
  TimerService& timer_service() noexcept override { return wheel_; }
  uv_loop_t* host_loop() const noexcept override { return wheel_.loop(); }
  void connection_closed(Connection& conn) noexcept override;
  void request_ended(Connection& conn) noexcept override;
  bool host_draining() const noexcept override { return draining_; }
  Duration proxy_header_timeout() const noexcept override {
    return options_.proxy_protocol ? options_.proxy_header_timeout : Duration{0};
  }
  bool proxy_source_trusted(const sockaddr& peer) const noexcept override {
    return options_.proxy_protocol_from.empty() || options_.proxy_protocol_from.contains(&peer);
  }
  ByteStageFactory* byte_stage_factory() const noexcept override {
    return options_.transport.get();
  }
  bool admit(Connection& conn, CloseReason& refusal) noexcept override;
  void connection_active(Connection& conn, std::uint16_t generation) noexcept override;
  Duration scale_idle_timeout(Duration timeout) const noexcept override;
  bool defer_to_next_turn(Connection& conn) noexcept override;
  void forget_turn(Connection& conn) noexcept override;
  static void on_turn_start(uv_idle_t* idle);

  // server_overload.cpp
  void setup_protection();
  void close_protection() noexcept;
  void update_pressure() noexcept;
  void sweep() noexcept;
  Connection* idlest() noexcept;
  void drop(Connection& victim) noexcept;
  static void on_memory_timer(uv_timer_t* timer);

  static void on_connection(uv_stream_t* listener, int status);
  static void on_turn_end(uv_check_t* check);
  void take_connection() noexcept;
  static void on_drain_timer(uv_timer_t* timer);
  void on_drain_timer_fired();
  static void on_resume_timer(uv_timer_t* timer);
  void pause_accepting() noexcept;
  void close_listener() noexcept;
  void accept_one() noexcept;
  void reject_one() noexcept;
  void drain_connection(Connection& conn) noexcept;
  // drain's spread (server_drain_spread.cpp).
  struct DrainSpread;
  void start_spread(Duration spread);
  static void on_spread_timer(uv_timer_t* timer);
  void spread_step() noexcept;
  void forget_spread(Connection& conn) noexcept;
  void end_spread() noexcept;
  void check_drained();
  std::error_code start_listener();

  LoopWheel& wheel_;
  Handler& handler_;
  ServerOptions options_;
  ServerStats stats_;
  Listener* listener_ = nullptr;        // heap: libuv needs it until its close callback
  uv_timer_t* drain_timer_ = nullptr;   // heap, same reason
  DrainSpread* spread_ = nullptr;       // heap, its timer inside; while spreading
  uv_timer_t* resume_timer_ = nullptr;  // heap, same reason
  uv_timer_t* memory_timer_ = nullptr;  // heap, same reason; only with memory pressure
  uv_check_t* turn_check_ = nullptr;    // heap, same reason; resets accepted_this_turn_
  uv_idle_t* turn_idle_ = nullptr;      // heap, same reason; active while turns_ is not empty
  std::deque<Connection*> turns_;       // call_next_turn, in order; nullptr: closed since
  ActivityList<Connection> list_;       // every connection; in order of last read when tracked
  ConnectionOptions effective_;
  std::shared_ptr<detail::IpLimiter> limiter_;
  Sweeper sweeper_{*this};
  std::uint32_t pressure_ = 0;  // steps (overload.h): the larger of the two below
  std::uint32_t mem_pressure_ = 0;
  std::size_t dropping_ = 0;  // idlest connections closing to admit newcomers
  TimePoint last_restart_{};  // of the sweep cursor
  bool restart_pending_ = false;
  std::uint64_t next_id_ = 1;
  std::size_t accepted_this_turn_ = 0;  // against options_.accept_batch
  bool accept_deferred_ = false;        // libuv holds an accepted socket for the next turn
  bool holds_reader_ = false;           // the loop's edge reader, while listening
  int port_ = 0;
  bool draining_ = false;
  bool drain_timed_out_ = false;
  std::function<void()> on_drained_;
};

}  // namespace heartwheel::net
