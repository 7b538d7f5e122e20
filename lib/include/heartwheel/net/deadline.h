// heartwheel/net/deadline.h - the named deadlines of a connection, and the
// event a handler gets when one passes.
//
// Every timeout of every protocol on a connection is one slot of the
// connection's deadline set (see deadline_set.h), and the whole set sits
// behind ONE entry in the loop's timing wheel. The slots are fixed and named:
//
//   slot               | set by                          | closes with (default action)
//   -------------------+---------------------------------+------------------------------
//   read_idle          | IdlePolicy, refreshed by reads  | read_idle
//   write_idle         | IdlePolicy, refreshed by writes | write_idle
//   all_idle           | IdlePolicy, refreshed by both   | all_idle
//   request_timeout    | Connection::begin_request       | request_timeout
//   max_age            | IdlePolicy, from open           | max_age
//   header_timeout     | protocols: a message head (HTTP | header_timeout
//                      | headers, the PROXY header)      |
//   body_timeout       | protocols: body progress        | body_timeout
//   keepalive_timeout  | protocols: idle between messages| keepalive_timeout
//   ping               | protocols: time to send a ping  | (the protocol handles it)
//   pong_timeout       | protocols: a ping's answer due  | pong_timeout
//   close_timeout      | protocols: a close handshake    | close_timeout
//   write_stall        | the net layer (write progress,  | write_stall (never delivered
//                      | WritePolicy); HTTP send timeout | to handlers)
//
// The idle slots repeat while the connection stays idle (Netty's
// IdleStateHandler: first == false after the first event); every other slot
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
  header_timeout,
  body_timeout,
  keepalive_timeout,
  ping,
  pong_timeout,
  close_timeout,
  write_stall,
};

inline constexpr std::size_t kDeadlineCount = 12;

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

// The reason a connection closes with when a handler lets `kind` close it.
// (`ping` has no failure meaning; a handler that lets it close gets `local`.)
CloseReason close_reason_for(Deadline kind) noexcept;

// "read_idle", "header_timeout", "ping", ...: the spelling in JSON statistics
// and metrics; for every slot but `ping` it is the spelling of its reason.
const char* to_string(Deadline kind) noexcept;

}  // namespace heartwheel::net
