// The RPC server's per-connection logic: decodes frames, answers REQUEST with
// RESPONSE (the payload echoed, at once or after --reply-delay), PING with
// PONG, sends its own PINGs through net::Heartbeat when write-idle, and lets
// the heartbeat close peers that stay silent. One RpcService per worker loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <heartwheel/net/connection.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/rpc/frame.h>

namespace rpcserver {

using heartwheel::Duration;
namespace net = heartwheel::net;

// Counters of one worker, written on its thread only, read after it joined.
struct RpcCounters {
  std::uint64_t requests = 0;
  std::uint64_t responses = 0;
  std::uint64_t errors_sent = 0;       // ERROR frames (requests refused while draining)
  std::uint64_t delayed = 0;           // responses scheduled on the wheel
  std::uint64_t dropped_replies = 0;   // delayed responses whose connection closed first
  std::uint64_t pings_received = 0;    // and answered with PONG
  std::uint64_t pings_sent = 0;        // heartbeats
  std::uint64_t pongs_received = 0;
  std::uint64_t unexpected_frames = 0; // RESPONSE / ERROR / unsolicited PONG from a client
  std::uint64_t protocol_errors = 0;   // connections closed for a bad frame
  std::uint64_t frames_too_large = 0;  //   of which: over the maximum length

  void merge(const RpcCounters& o) noexcept;
};

struct ServiceOptions {
  Duration reply_delay{0};
  std::size_t max_frame_length = heartwheel::rpc::kDefaultMaxFrameLength;
  // heartbeat.interval == 0 switches heartbeats (and the idle close) off.
  net::HeartbeatConfig heartbeat;
  // Set by the process when it starts draining: new requests get ERROR.
  const std::atomic<bool>* draining = nullptr;
};

class RpcService final : public net::Handler {
 public:
  RpcService(ServiceOptions options, RpcCounters& counters);
  ~RpcService() override;

  void on_open(net::Connection& conn) override;
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;

 private:
  struct Session;
  struct DelayedReply;
  void handle_frame(Session& s, const heartwheel::rpc::FrameView& frame);
  void answer_request(Session& s, std::uint64_t id, std::string_view payload);
  void send_ping(net::Connection& conn);
  static void on_reply_due(heartwheel::TimerEntry& entry);

  ServiceOptions options_;
  RpcCounters& counters_;
  std::unique_ptr<net::Heartbeat> heartbeat_;  // null when heartbeats are off
  std::string out_;  // frames produced while handling one read, written at once
};

// The connection options a server using RpcService needs (heartbeat idle
// policy and TCP_USER_TIMEOUT); `base` is kept otherwise.
net::ConnectionOptions connection_options_for(const ServiceOptions& options,
                                              net::ConnectionOptions base = {});

}  // namespace rpcserver
