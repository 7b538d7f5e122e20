// heartwheel/net/close_reason.h - why a connection was closed.
//
// Every connection closes with exactly one reason, whatever protocol runs on
// it. Servers count closes per reason (NetStats::closed_by_reason, the metric
// heartwheel_connections_closed_total{reason}) and hand the reason to
// Handler::on_close.
//
// An open set of small numbers. The enumerators below are net's own reasons
// (0 .. kLayerCloseReasonFirst - 1). A layer above net (a protocol, a
// transport stage) defines its own reasons as CloseReason values in the
// range [kLayerCloseReasonFirst, kCloseReasonCapacity), picked once and
// listed in lib/src/net/README.md ("Numbers taken"), and registers a name for
// each (names.h): the name is the reason's spelling in JSON statistics and
// metric labels, so a dashboard reads reason="..." whichever process counted
// it. Fixed numbers make the counters of pre-forked processes merge by index
// whatever each process ran first; registration refuses a number or a name
// that is already taken, at program start.
//
// Threads: plain values, any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace heartwheel::net {

enum class CloseReason : std::uint8_t {
  // Deadlines (see deadline.h).
  read_idle,        // nothing read for IdlePolicy::read_idle
  write_idle,       // nothing written for IdlePolicy::write_idle
  all_idle,         // neither read nor written for IdlePolicy::all_idle
  request_timeout,  // a request deadline passed (Connection::begin_request)
  max_age,          // the connection lived IdlePolicy::max_age
  write_stall,      // the peer stopped reading: no write progress, or too slow
  pong_timeout,     // a heartbeat ping went unanswered (slot_heartbeat.h)
  // The peer, the protocol, the application.
  peer_closed,     // the peer sent FIN (after our pending bytes were flushed) or reset
  protocol_close,  // the protocol ended it normally (e.g. an HTTP "Connection: close")
  protocol_error,  // the peer sent bytes the protocol refuses (e.g. an HTTP 400)
  error,           // socket error, handler exception, or a programming error (deadline.h)
  slow_consumer,   // a subscriber fell behind its queued-bytes limit (policy close)
  // Admission and shutdown.
  limit,                 // over ServerOptions::max_connections (accepted, then closed)
  ip_limit,              // over the per-source-address connection limit
  overload,              // closed as one of the idlest to admit a new connection
  proxy_header_timeout,  // no complete PROXY protocol header in time
  proxy_header_invalid,  // a malformed PROXY protocol header
  drain,                 // the server drained (SIGTERM/SIGINT or Server::drain)
  local,                 // the application closed it (Connection::close) or stopped the server
  // Added after the others so the numbers above keep their meaning.
  proxy_untrusted,  // PROXY protocol from a source outside ServerOptions::proxy_protocol_from
};

// net's own reasons are 0 .. kNetCloseReasons - 1.
inline constexpr std::size_t kNetCloseReasons = 20;
// The first number a layer above net may take for a reason of its own.
inline constexpr std::uint8_t kLayerCloseReasonFirst = 32;
// Every reason is below this: the size of the per-reason counters.
inline constexpr std::size_t kCloseReasonCapacity = 64;
// Closes counted by reason number (NetStats::closed_by_reason and the
// layers' own), so the counters of any two processes merge index by index.
using CloseReasonCounts = std::array<std::uint64_t, kCloseReasonCapacity>;

// "read_idle", "peer_closed", a registered layer's "header_timeout", ...:
// the spelling in JSON statistics and metric labels; "unknown" for a number
// nobody named. Lock-free: one atomic load for a layer's reason.
const char* to_string(CloseReason reason) noexcept;

// True for net's own reasons and the registered ones: those the statistics
// writers list (zeros included).
bool is_named(CloseReason reason) noexcept;

// Appends counts as one JSON object, {"read_idle":n,...}: every named reason
// in number order, zeros included (the layers' JSON statistics all write
// their per-reason counts so).
void append_close_reasons_json(std::string& out, const CloseReasonCounts& counts);

}  // namespace heartwheel::net
