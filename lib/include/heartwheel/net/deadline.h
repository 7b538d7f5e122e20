// heartwheel/net/deadline.h - the kinds of deadline a connection keeps, and
// the event a handler gets when one passes.
//
// Every timeout on a connection, net's and those of every layer on it, is one
// slot of the connection's deadline set (deadline_set.h), and the whole set
// sits behind ONE entry in the loop's timing wheel. A Deadline names the kind
// of a slot. net's own kinds:
//
//   kind                 | set by                          | closes with (default action)
//   ---------------------+---------------------------------+------------------------------
//   read_idle            | IdlePolicy, refreshed by reads  | read_idle
//   write_idle           | IdlePolicy, refreshed by writes | write_idle
//   all_idle             | IdlePolicy, refreshed by both   | all_idle
//   request_timeout      | Connection::begin_request       | request_timeout
//   max_age              | IdlePolicy, from open           | max_age
//   write_stall          | the write path (WritePolicy)    | write_stall (never delivered
//                        |                                 | to handlers)
//   proxy_header_timeout | the PROXY stage (server.h)      | proxy_header_timeout
//   ping                 | a heartbeat: time to send a     | local (the protocol sends
//                        | ping (slot_heartbeat.h)         | its ping and keeps it)
//   pong_timeout         | a heartbeat: a ping's answer due| pong_timeout
//
// The first six have fixed slots in every set. Every other kind, net's last
// three and every layer's, is kept in one of the set's few claimed slots
// (DeadlineSet::kClaimedSlots): taken by set_deadline, given back when the
// deadline is cleared or passes, so no layer needs to know which others run
// on the connection.
//
// A layer above net (an HTTP header timeout, a WebSocket close handshake, a
// TLS handshake, an auth token's expiry) defines its kinds as Deadline values
// in [kLayerDeadlineFirst, kDeadlineCapacity), picked once and listed in
// lib/src/net/README.md ("Numbers taken"), and registers each with its name
// and the CloseReason it closes with (names.h). The name is the kind's
// spelling in JSON statistics (idle_events) and metrics (kind="...").
//
// The idle kinds repeat while the connection stays idle (Netty's
// IdleStateHandler: first == false after the first event); every other kind
// fires once and is cleared, and its owner sets it again if it wants.
// Threads: plain values, any thread.
#pragma once

#include <heartwheel/net/close_reason.h>

#include <cstddef>
#include <cstdint>

namespace heartwheel::net {

enum class Deadline : std::uint8_t {
  read_idle,
  write_idle,
  all_idle,
  request_timeout,
  max_age,
  write_stall,
  proxy_header_timeout,
  ping,
  pong_timeout,
};

// net's own kinds are 0 .. kNetDeadlines - 1.
inline constexpr std::size_t kNetDeadlines = 9;
// The first kind kept in a claimed slot; every kind from here on is one.
inline constexpr Deadline kFirstClaimedDeadline = Deadline::proxy_header_timeout;
// The first number a layer above net may take for a kind of its own.
inline constexpr std::uint8_t kLayerDeadlineFirst = 16;
// Every kind is below this: the size of NetStats::idle_events.
inline constexpr std::size_t kDeadlineCapacity = 32;

// A slot passed. `first`: the first event of an idle slot since the last
// activity of its kind (always true for the other slots).
struct DeadlineEvent {
  Deadline kind;
  bool first;
};

// What the handler wants done about a deadline event.
enum class DeadlineAction : std::uint8_t {
  close,  // close with close_reason_for(kind) (the default)
  keep,   // the handler took it over (sent a ping, answered 408, ...)
};

// The reason a connection closes with when a handler lets `kind` close it:
// net's table above, or the reason registered with a layer's kind; `local`
// for a kind nobody registered. Lock-free.
CloseReason close_reason_for(Deadline kind) noexcept;

// "read_idle", "ping", a layer's "header_timeout", ...: the spelling in JSON
// statistics and metrics; "unknown" for a kind nobody registered. Lock-free.
const char* to_string(Deadline kind) noexcept;

// True for net's own kinds and the registered ones.
bool is_named(Deadline kind) noexcept;

}  // namespace heartwheel::net
