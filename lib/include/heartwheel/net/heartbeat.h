// heartwheel/net/heartbeat.h - the numbers of a connection heartbeat.
//
// The rule (Dubbo's, the same on both ends of a connection), run by
// SlotHeartbeat (slot_heartbeat.h) on a connection's ping and pong_timeout
// deadlines for any protocol that sends pings of its own:
//   - nothing READ or nothing WRITTEN for `interval` -> send a ping (the
//     protocol's bytes);
//   - nothing READ for `timeout` (default miss_limit x interval = 3x) -> the
//     peer is dead: close with CloseReason::pong_timeout. A client then
//     reconnects (Connector does, with backoff).
// Any bytes read count as life. First pings of connections opened together
// are spread by a random delay of up to `jitter` x interval. TCP_USER_TIMEOUT
// is set to the timeout (Linux) when asked, so the kernel also gives up on
// unacknowledged data in that time.
//
// A timeout under twice the interval is rejected: a single lost or late ping
// would close a healthy connection.
// Threads: plain values, any thread.
#pragma once

#include <heartwheel/common/time.h>

#include <chrono>

namespace heartwheel::net {

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

}  // namespace heartwheel::net
