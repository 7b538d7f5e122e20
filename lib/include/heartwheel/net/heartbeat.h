// heartwheel/net/heartbeat.h - a protocol-agnostic heartbeat on top of the
// idle policy.
//
// The rule (Dubbo's, the same on both ends of a connection):
//   - nothing WRITTEN for `interval` -> send a ping (the protocol's bytes);
//   - nothing READ for `timeout` (default miss_limit x interval = 3x) -> the
//     peer is dead: close with CloseReason::read_idle. A client then
//     reconnects (Connector does, with backoff).
// Any bytes read count as life; a pong additionally measures the round trip.
// The protocol supplies two things: how to send a ping (send_ping) and telling
// the heartbeat when a pong arrived (on_pong); it also keeps one
// HeartbeatState per connection in its own per-connection data (a Connection
// carries none, so connections without heartbeats do not pay for it). First
// pings of connections
// opened together are spread by a random delay of up to `jitter` x interval.
// TCP_USER_TIMEOUT is set to the timeout (Linux) so the kernel also gives up
// on unacknowledged data in that time.
//
// A timeout under twice the interval is rejected: a single lost or late ping
// would close a healthy connection.
//
// HeartbeatConfig also configures rpc::NetHandler's heartbeat, which applies
// the same numbers to the connection's ping and pong_timeout slots instead of
// the idle policy (see heartwheel/rpc/net_handler.h).
// Threads: a Heartbeat is immutable after construction and may be shared by
// the handlers of one loop; its methods run on the connection's thread.
#pragma once

#include <functional>

#include <heartwheel/net/connection.h>
#include <heartwheel/net/idle_policy.h>

namespace heartwheel::net {

// One connection's heartbeat bookkeeping (24 bytes), kept by the protocol.
struct HeartbeatState {
  TimePoint ping_sent_at{};  // when the outstanding ping was sent
  Duration last_rtt{-1};     // negative: not measured yet
  std::uint32_t pings_sent = 0;
  bool awaiting_pong = false;
};

struct HeartbeatConfig {
  Duration interval = std::chrono::seconds(60);
  unsigned miss_limit = 3;  // timeout = miss_limit x interval unless timeout is set
  Duration timeout{0};      // 0 = miss_limit x interval; must be >= 2 x interval
  double jitter = 0.2;      // first ping delayed by up to jitter x interval (0..1)
  bool set_tcp_user_timeout = true;

  Duration effective_timeout() const noexcept {
    return timeout.count() > 0 ? timeout : interval * static_cast<Duration::rep>(miss_limit);
  }
  // Throws std::invalid_argument: interval <= 0, miss_limit < 2 without an
  // explicit timeout, timeout < 2 x interval, jitter outside [0, 1].
  void validate() const;
};

class Heartbeat {
 public:
  using SendPing = std::function<void(Connection&)>;

  // Validates `config` (throws std::invalid_argument).
  Heartbeat(HeartbeatConfig config, SendPing send_ping);

  const HeartbeatConfig& config() const noexcept { return config_; }

  // `base` with write_idle = interval, read_idle = timeout and the first-ping
  // jitter; other fields (all_idle, max_age, refresh) are kept.
  IdlePolicy idle_policy(IdlePolicy base = {}) const noexcept;
  // `base` with idle_policy(base.idle) and, if configured, tcp_user_timeout.
  ConnectionOptions connection_options(ConnectionOptions base = {}) const noexcept;

  // Call from Handler::on_deadline with the connection's state. write_idle:
  // sends a ping, records the send time in `state`, returns keep. read_idle:
  // returns close (the peer is dead). Other kinds: close (the default
  // action), so a handler can forward everything.
  DeadlineAction on_deadline(Connection& conn, DeadlineEvent event, HeartbeatState& state) const;

  // The protocol read a pong: records the round-trip time in `state`.
  void on_pong(const Connection& conn, HeartbeatState& state) const noexcept;

 private:
  HeartbeatConfig config_;
  SendPing send_ping_;
};

}  // namespace heartwheel::net
