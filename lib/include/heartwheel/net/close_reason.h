// heartwheel/net/close_reason.h - why a connection was closed.
//
// Every connection closes with exactly one reason; servers count closes per
// reason (ServerStats::closed_by_reason) and hand the reason to
// Handler::on_close. The first five reasons mirror IdleKind one to one, so the
// default action on an idle event is close_reason_for(kind).
// Threads: plain values, any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heartwheel::net {

enum class CloseReason : std::uint8_t {
  read_idle,        // nothing read for IdlePolicy::read_idle
  write_idle,       // nothing written for IdlePolicy::write_idle
  all_idle,         // neither read nor written for IdlePolicy::all_idle
  request_timeout,  // a deadline from Connection::begin_request passed
  max_age,          // the connection lived IdlePolicy::max_age
  peer_closed,      // the peer sent FIN (after our pending bytes were flushed) or reset
  error,            // socket error, handler exception or codec error
  limit,            // over ServerOptions::max_connections (accepted, then closed)
  write_stall,      // the peer stopped reading: no write progress, or too slow
  drain,            // the server drained (SIGTERM/SIGINT or Server::drain)
  local,            // the application closed it (Connection::close) or stopped the server
};

inline constexpr std::size_t kCloseReasonCount = 11;

// "read_idle", "peer_closed", ...: the spelling used in JSON statistics.
const char* to_string(CloseReason reason) noexcept;

}  // namespace heartwheel::net
