// heartwheel/redis/link_options.h - what every Redis link (Client,
// Subscriber) is configured with: where Redis is, how the connection is kept,
// what it sends first, and its connection events.
//
// A link is ONE net::Connector connection speaking RESP2, so it gets what
// every heartwheel connection gets (net/connector.h): a connect timeout,
// reconnects with exponential backoff and jitter, and its timeouts as slots
// of the connection's deadline set (no wheel entries of its own):
//   - ping / pong_timeout: net::SlotHeartbeat's rule (slot_heartbeat.h): a
//     PING when nothing was read or nothing was written for
//     heartbeat.interval; no byte from Redis for heartbeat's timeout while a
//     PING is out closes the connection with CloseReason::pong_timeout (a
//     frozen Redis, a dead host, a cut network), and the connector
//     reconnects.
//   - request_timeout: the Client's per-command deadlines (client.h).
// The defaults suit a Redis on the same network: connect timeout 2 s,
// backoff 100 ms doubling to 5 s with 20% jitter, a PING after 5 s of quiet,
// closed after 15 s of silence.
// Threads: plain values.
#pragma once

#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/connector.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/reader.h>

#include <cstddef>
#include <functional>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::redis {

inline constexpr int kDefaultPort = 6379;

// ConnectorOptions for Redis: 127.0.0.1:6379, the backoff above, and a write
// policy that never stops reading (slow_reader = close): a link that paused
// reading while its writes queue up could deadlock against Redis, which stops
// reading a client whose replies it cannot write.
net::ConnectorOptions default_connector_options();

struct LinkOptions {
  net::ConnectorOptions connector = default_connector_options();
  // interval 0 switches the heartbeat (and its pong_timeout close) off.
  net::HeartbeatConfig heartbeat{.interval = std::chrono::seconds(5)};
  // Sent first on every connection, before anything else, e.g.
  //   {{"AUTH", user, password}, {"SELECT", "2"}, {"CLIENT", "SETNAME", "push-1"}}.
  // An error reply closes that connection (CloseReason::protocol_error,
  // counted in setup_errors, reported to on_error); the connector then tries
  // again after its backoff.
  std::vector<Command> setup;
  // A reply larger than this closes the connection (protocol_errors).
  std::size_t max_reply_bytes = kDefaultMaxReplyBytes;
  // The link's writes are batched per loop iteration; a batch this large is
  // written at once (> 0).
  std::size_t flush_bytes = 64 * 1024;

  // A connection opened (the setup commands are on their way).
  std::function<void()> on_connect;
  // The connection closed: pong_timeout, peer_closed (Redis went away),
  // protocol_error, local (stop()), error (the socket failed: `error` says
  // how). The connector reconnects unless stopped.
  std::function<void(net::CloseReason reason, std::error_code error)> on_disconnect;
  // Something the application may want to log: a setup command's error
  // (server_error, Redis's text) or bytes that are not RESP2
  // (protocol_error / frame_too_large, hiredis's text).
  std::function<void(std::error_code error, std::string_view detail)> on_error;

  // Throws std::invalid_argument naming the bad field (also the connector's
  // and heartbeat's).
  void validate() const;
};

}  // namespace heartwheel::redis
