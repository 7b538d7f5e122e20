// The RPC client's logic on one loop: a net::Pool of connections to one or
// more servers (each a net::Connector: reconnect with backoff; heartbeats
// on their ping/pong slots; outlier ejection; p2c or round-robin picks),
// served by an rpc::NetHandler (frames, per-call deadlines in the loop's
// timing wheel, batched writes); this class paces the calls at a rate or up
// to a total, tells the pool how each ended, and keeps the samples the
// summary prints.
#pragma once

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/net/pool.h>
#include <heartwheel/rpc/call_table.h>
#include <heartwheel/rpc/frame.h>
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/failure.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "samples.h"

namespace rpcclient {

using heartwheel::Duration;
using heartwheel::TimePoint;
namespace net = heartwheel::net;
namespace rpc = heartwheel::rpc;

struct ClientOptions {
  std::vector<std::string> servers;  // HOST:PORT each (numeric, or localhost)
  // connector: backoff, connect timeout; heartbeat (interval 0 = none);
  // outlier ejection; balance; connections per server. ping and the hooks
  // are the client's.
  net::PoolOptions pool;
  double rate = 100;  // calls per second; 0 = none paced: `calls` go back to back, else heartbeats only
  std::uint64_t calls = 0;            // total calls to make; 0 = no limit (run for `duration`)
  std::size_t max_in_flight = 1000;
  Duration call_timeout = std::chrono::seconds(1);
  Duration duration = std::chrono::seconds(10);  // 0 = until `calls` are done
  std::size_t payload_size = 16;
  std::size_t max_frame_length = rpc::kDefaultMaxFrameLength;
  // A client Context: every connection speaks TLS, the handshake bounded by
  // pool.connector.connect_timeout, the name sent (SNI) and verified the
  // host of its --server as given. Null: plain.
  std::shared_ptr<const heartwheel::tls::Context> tls;

  // Throws std::invalid_argument naming the flag to change (rate, call
  // timeout, max in flight, and a run without an end).
  void validate() const;
};

// What this client counts beyond the handler's statistics.
struct ClientCounters {
  // Due (by --rate, counted from the first connection) while disconnected or
  // at max_in_flight, so not made.
  std::uint64_t calls_unsent = 0;
  std::uint64_t payload_mismatches = 0;  // RESPONSE payload differs from the request's
  Samples rtt_ns;            // ok calls
  Samples heartbeat_rtt_ns;  // PING -> PONG
};

class RpcClient final {
 public:
  // Throws std::invalid_argument for a bad configuration.
  RpcClient(heartwheel::LoopWheel& wheel, ClientOptions options);
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Connects and starts issuing calls; `on_finished` runs (on the loop) once
  // the run is over, every call completed and the connection closed.
  void start(std::function<void()> on_finished);
  // Ends the run early (signal): no new calls; in-flight ones finish or time out.
  void finish();

  rpc::CallTableStats call_stats() const noexcept { return handler_.call_stats(); }
  const rpc::NetHandlerStats& rpc_stats() const noexcept { return handler_.stats(); }
  const ClientCounters& counters() const noexcept { return counters_; }
  const net::NetStats& net_stats() const noexcept { return pool_.net_stats(); }
  // Connections opened, over every server.
  std::uint64_t connects() const noexcept { return pool_.totals().connects; }
  // Connections opened again after one of theirs closed.
  std::uint64_t reconnects() const noexcept { return pool_.totals().reconnects; }
  // Every server's counters and state.
  std::vector<net::EndpointInfo> servers() const { return pool_.endpoints(); }
  // Why the run ended early: a TLS handshake refused for a reason a retry
  // cannot change (the certificate, no common cipher or version, not TLS at
  // all), as "tls: handshake with HOST:PORT failed: MESSAGE"; empty
  // otherwise. A handshake timeout is retried like a failed connect.
  const std::string& fatal_error() const noexcept { return fatal_error_; }
  Duration elapsed() const noexcept;

 private:
  struct Pacer;
  rpc::NetHandlerOptions handler_options();
  net::PoolOptions pool_options();
  void on_tls_failure(const std::string& server, heartwheel::tls::FailureCause cause,
                      const std::string& message);
  // The handler's and the pool's hooks.
  void on_available();
  void on_close();
  void on_call_done(const rpc::CallCompletion& done);

  void pace();               // issue the calls due by now
  bool issue_one();          // false if it could not
  bool done_issuing() const noexcept;
  void maybe_finished();
  void notify_finished();

  heartwheel::LoopWheel& wheel_;
  ClientOptions options_;
  rpc::NetHandler handler_;  // before pool_: it serves the pool's connections
  net::Pool pool_;
  std::unique_ptr<Pacer> pacer_;
  std::size_t open_ = 0;  // connections open (the handler's on_open .. on_close)
  std::string payload_;
  ClientCounters counters_;
  std::string fatal_error_;
  std::uint64_t issued_ = 0;      // calls started
  std::uint64_t due_taken_ = 0;   // paced slots used (started or unsent)
  TimePoint started_at_{};
  std::optional<TimePoint> paced_from_;  // the first connection's open
  TimePoint stopped_at_{};
  bool finishing_ = false;
  bool finished_ = false;
  bool notified_ = false;
  std::function<void()> on_finished_;
};

}  // namespace rpcclient
