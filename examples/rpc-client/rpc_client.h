// The RPC client's logic on one loop: one connection kept up by a
// net::Connector (reconnect with backoff), calls paced at a rate or up to a
// total, each with a deadline in the loop's timing wheel (rpc::CallTable),
// heartbeats through net::Heartbeat, and the counters the summary prints.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <heartwheel/loop_wheel.h>
#include <heartwheel/net/connector.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/rpc/call_table.h>
#include <heartwheel/rpc/frame.h>

#include "samples.h"

namespace rpcclient {

using heartwheel::Duration;
using heartwheel::TimePoint;
namespace net = heartwheel::net;
namespace rpc = heartwheel::rpc;

struct ClientOptions {
  net::ConnectorOptions connector;    // host, port, backoff
  net::HeartbeatConfig heartbeat;     // interval 0 = no heartbeats
  double rate = 100;  // calls per second; 0 = none paced: `calls` go back to back, else heartbeats only
  std::uint64_t calls = 0;            // total calls to make; 0 = no limit (run for `duration`)
  std::size_t max_in_flight = 1000;
  Duration call_timeout = std::chrono::seconds(1);
  Duration duration = std::chrono::seconds(10);  // 0 = until `calls` are done
  std::size_t payload_size = 16;
  std::size_t max_frame_length = rpc::kDefaultMaxFrameLength;

  // Throws std::invalid_argument naming the flag to change (rate, call
  // timeout, max in flight, and a run without an end).
  void validate() const;
};

struct ClientCounters {
  // Due (by --rate, counted from the first connection) while disconnected or
  // at max_in_flight, so not made.
  std::uint64_t calls_unsent = 0;
  std::uint64_t heartbeats_sent = 0;     // PINGs sent
  std::uint64_t pongs_received = 0;
  std::uint64_t pings_received = 0;      // the server's heartbeats, answered with PONG
  std::uint64_t unexpected_frames = 0;   // REQUEST from the server
  std::uint64_t protocol_errors = 0;
  std::uint64_t payload_mismatches = 0;  // RESPONSE payload differs from the request's
  Samples rtt_ns;            // ok calls
  Samples heartbeat_rtt_ns;  // PING -> PONG
};

class RpcClient final : public net::Handler, private rpc::CallListener {
 public:
  // Throws std::invalid_argument for a bad configuration.
  RpcClient(heartwheel::LoopWheel& wheel, ClientOptions options);
  ~RpcClient() override;

  // Connects and starts issuing calls; `on_finished` runs (on the loop) once
  // the run is over, every call completed and the connection closed.
  void start(std::function<void()> on_finished);
  // Ends the run early (signal): no new calls; in-flight ones finish or time out.
  void finish();

  const rpc::CallTableStats& call_stats() const noexcept { return calls_.stats(); }
  const ClientCounters& counters() const noexcept { return counters_; }
  const net::NetStats& net_stats() const noexcept { return connector_.stats(); }
  std::uint64_t connects() const noexcept { return connector_.connects(); }
  Duration elapsed() const noexcept;

 private:
  struct Pacer;
  // net::Handler
  void on_open(net::Connection& conn) override;
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;
  // rpc::CallListener
  void on_call_done(const rpc::CallCompletion& done) override;

  void handle_frame(net::Connection& conn, const rpc::FrameView& frame);
  void send_ping(net::Connection& conn);
  void pace();               // issue the calls due by now
  bool issue_one();          // false if it could not
  bool done_issuing() const noexcept;
  void maybe_finished();
  void notify_finished();

  heartwheel::LoopWheel& wheel_;
  ClientOptions options_;
  std::unique_ptr<net::Heartbeat> heartbeat_;
  net::Connector connector_;
  rpc::CallTable calls_;
  std::unique_ptr<Pacer> pacer_;
  std::unique_ptr<rpc::FrameDecoder> decoder_;  // per connection
  net::Connection* conn_ = nullptr;
  std::string payload_;
  std::string out_;
  ClientCounters counters_;
  std::uint64_t ping_seq_ = 0;
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
