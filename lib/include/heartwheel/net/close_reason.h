// heartwheel/net/close_reason.h - why a connection was closed.
//
// Every connection closes with exactly one reason, whatever protocol runs on
// it (echo, HTTP, RPC, WebSocket): one enum for every layer. Servers count
// closes per reason (NetStats::closed_by_reason, the metric
// heartwheel_connections_closed_total{reason}) and hand the reason to
// Handler::on_close. A deadline that closes a connection closes it with the
// reason of the same name (close_reason_for in deadline.h).
// Threads: plain values, any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heartwheel::net {

enum class CloseReason : std::uint8_t {
  // Deadlines (see deadline.h).
  read_idle,          // nothing read for IdlePolicy::read_idle
  write_idle,         // nothing written for IdlePolicy::write_idle
  all_idle,           // neither read nor written for IdlePolicy::all_idle
  request_timeout,    // a request deadline passed (Connection::begin_request)
  max_age,            // the connection lived IdlePolicy::max_age
  header_timeout,     // a message head (HTTP headers, PROXY header) did not arrive in time
  body_timeout,       // a message body stopped making progress
  keepalive_timeout,  // idle between messages (HTTP keep-alive, before the first request)
  pong_timeout,       // a heartbeat ping went unanswered
  close_timeout,      // the peer did not finish a close handshake in time
  write_stall,  // the peer stopped reading: no write progress, or too slow (HTTP send timeout)
  // The peer, the protocol, the application.
  peer_closed,     // the peer sent FIN (after our pending bytes were flushed) or reset
  protocol_close,  // the protocol ended it normally (HTTP Connection: close, a WebSocket close)
  protocol_error,  // the peer sent bytes the protocol refuses (HTTP 400/413/431, WebSocket 1002)
  error,           // socket error or handler exception
  slow_consumer,   // a subscriber fell behind its queued-bytes limit (policy close)
  // Admission and shutdown.
  limit,                 // over ServerOptions::max_connections (accepted, then closed)
  ip_limit,              // over the per-source-address connection limit
  overload,              // closed as one of the idlest to admit a new connection
  proxy_header_timeout,  // no complete PROXY protocol header in time
  proxy_header_invalid,  // a malformed PROXY protocol header
  drain,                 // the server drained (SIGTERM/SIGINT or Server::drain)
  local,                 // the application closed it (Connection::close) or stopped the server
};

inline constexpr std::size_t kCloseReasonCount = 23;

// "read_idle", "peer_closed", ...: the spelling used in JSON statistics and
// metric labels.
const char* to_string(CloseReason reason) noexcept;

}  // namespace heartwheel::net
