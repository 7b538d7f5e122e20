// heartwheel/testing/host.h - drive your own net::Handler on a virtual clock,
// without the network and without sleeping.
//
// What it is
//   A stand-in for net::Server / net::Connector in unit tests. It opens real
//   net::Connection objects (the very code that runs in production: deadline
//   set, write queue, close reasons, statistics) whose time comes from a
//   ManualTimerService you advance by hand, and whose bytes travel over an
//   in-process socket pair: no ports, no network, no threads. Each
//   connection has a Peer: the other end, which your test writes to and
//   reads from.
//
//     struct Echo : net::Handler {
//       void on_data(net::Connection& c, std::string_view d) override { c.write(d); }
//     } echo;
//     net::ConnectionOptions options;
//     options.idle.read_idle = 5s;
//     heartwheel::testing::Host host(options);
//     auto& peer = host.open(echo);
//     peer.send("hi");
//     CHECK(peer.received() == "hi");
//     host.run_for(4999ms);
//     CHECK(peer.open());
//     host.run_for(1ms);                        // the read-idle deadline passes
//     CHECK(peer.close_reason() == net::CloseReason::read_idle);
//
// Time: host.now() starts at `start` and moves only in run_for(), which fires
// every deadline on the way in order (each callback sees now() equal to its
// own deadline, as under a real loop with zero latency) and moves pending
// bytes both ways before and after. I/O never advances time.
//
// Ownership and lifetime: the Host owns its loop, its wheel, every Connection
// it opened and every Peer. Handlers are borrowed and must outlive the Host
// (or the connections they serve). The destructor closes what is still open
// (reason local, on_close runs) and checks the loop closes cleanly.
// Threads: one thread, the test's. Not for production use.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/net/byte_stage.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/detail/connection_host.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/timer/virtual_clock.h>
#include <uv.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace heartwheel::testing {

class Host;

// The far end of one connection: what a client would see.
class Peer {
 public:
  // Writes `bytes` to the connection, then lets the loop deliver them
  // (Handler::on_data runs before this returns).
  void send(std::string_view bytes);
  // Everything the connection wrote since the last call.
  std::string received();
  // At most `at_most` bytes of it, read without letting the connection write
  // more meanwhile: a reader that takes only part of what is waiting.
  std::string received(std::size_t at_most);
  // Ends the peer's sending side (the connection sees EOF: Handler::on_eof).
  void shutdown_write();
  // Closes the peer's socket entirely (the connection sees EOF or a reset).
  void close();

  // The connection while it is open; nullptr once on_close ran.
  net::Connection* connection() const noexcept { return conn_; }
  bool open() const noexcept { return conn_ != nullptr; }
  // Why the connection closed (after on_close ran); nullopt while open.
  std::optional<net::CloseReason> close_reason() const noexcept { return reason_; }

 private:
  friend class Host;
  Peer(Host& host, int fd) noexcept : host_(&host), fd_(fd) {}
  Host* host_;
  int fd_;
  net::Connection* conn_ = nullptr;
  std::optional<net::CloseReason> reason_;
};

class Host final : private net::detail::ConnectionHost {
 public:
  // `options` are every connection's (validated: std::invalid_argument).
  // Throws std::system_error if the loop cannot be created.
  explicit Host(net::ConnectionOptions options = {}, Duration tick = std::chrono::milliseconds(1),
                TimePoint start = TimePoint{});
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Opens a connection served by `handler` (Handler::on_open runs before
  // this returns) and returns its peer, owned by the Host. Throws
  // std::system_error if the socket pair cannot be made.
  Peer& open(net::Handler& handler);

  // Advances virtual time by `d`, firing due deadlines in order, with bytes
  // moved both ways before and after.
  void run_for(Duration d);
  // Moves pending bytes and finishes pending closes; time stands still.
  void poll();

  // Every connection opened from now on must start with a PROXY header
  // within `header_timeout`, as with net::ServerOptions::proxy_protocol;
  // zero (the default): none expected.
  void set_proxy_protocol(Duration header_timeout) noexcept { proxy_timeout_ = header_timeout; }
  // With set_proxy_protocol: connections opened from now on whose socket
  // peer (an unnamed AF_UNIX address here) `trusted` refuses are reset at
  // once as proxy_untrusted, as net::ServerOptions::proxy_protocol_from
  // does; empty (the default): every peer trusted.
  void set_proxy_trust(std::function<bool(const sockaddr&)> trusted) {
    proxy_trust_ = std::move(trusted);
  }
  // Every connection opened from now on runs through `factory`'s transport
  // (after the PROXY header), as with net::ServerOptions::transport (TLS:
  // heartwheel/tls/net_transport.h); null (the default): none.
  void set_transport(std::shared_ptr<net::ByteStageFactory> factory) noexcept {
    transport_ = std::move(factory);
  }

  // Counts `bytes` as written on `conn` without writing them (its
  // bytes_written() and stats(), write activity): the byte counters' carry
  // past 4 GiB, tested without gigabytes of writes. Nothing for 0 bytes or
  // a closing connection.
  static void count_written(net::Connection& conn, std::size_t bytes) noexcept {
    ConnectionHost::count_written(conn, bytes);
  }

  TimePoint now() const noexcept { return timers_.now(); }
  ManualTimerService& timers() noexcept { return timers_; }
  // Every connection's counters, as a Server would keep them.
  const net::NetStats& stats() const noexcept { return stats_; }
  const net::ConnectionOptions& options() const noexcept { return options_; }
  uv_loop_t* loop() noexcept { return &loop_; }

 private:
  friend class Peer;
  const net::ConnectionOptions& connection_options() const noexcept override { return options_; }
  net::NetStats& net_stats() noexcept override { return stats_; }
  TimerService& timer_service() noexcept override { return timers_; }
  uv_loop_t* host_loop() const noexcept override { return const_cast<uv_loop_t*>(&loop_); }
  void connection_closed(net::Connection& conn) noexcept override;
  Duration proxy_header_timeout() const noexcept override { return proxy_timeout_; }
  bool proxy_source_trusted(const sockaddr& peer) const noexcept override {
    return !proxy_trust_ || proxy_trust_(peer);
  }
  net::ByteStageFactory* byte_stage_factory() const noexcept override { return transport_.get(); }

  net::ConnectionOptions options_;
  net::NetStats stats_;
  ManualTimerService timers_;
  uv_loop_t loop_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::uint64_t next_id_ = 1;
  Duration proxy_timeout_{0};
  std::function<bool(const sockaddr&)> proxy_trust_;
  std::shared_ptr<net::ByteStageFactory> transport_;
};

}  // namespace heartwheel::testing
