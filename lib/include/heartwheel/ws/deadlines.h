// heartwheel/ws/deadlines.h - the WebSocket layer's deadline kind and close
// reason.
//
// A WebSocket connection's heartbeat uses net's own ping and pong_timeout
// kinds (closing with CloseReason::pong_timeout); what is WebSocket's alone
// is the close handshake: once one side sent its close frame, the peer has
// close_timeout (NetHandlerOptions, ClientOptions) to answer with its own
// before TCP closes; and, on the client side (ws::Client), the opening
// handshake: the 101 must arrive within ClientOptions::handshake_timeout.
// The numbers are this layer's for good (lib/src/net/README.md, "Numbers
// taken"); including this header registers their names
// (heartwheel/net/names.h), the spellings in JSON statistics and metrics.
//
//   deadline kind         | closes with
//   ----------------------+----------------------
//   close_timeout 20      | close_timeout 36
//   handshake_timeout 21  | handshake_timeout 37  (ws::Client)
//
// Threads: plain values, any thread.
#pragma once

#include <heartwheel/net/names.h>

namespace heartwheel::ws {

namespace close_reason {
// The peer did not finish the close handshake in time.
inline constexpr net::CloseReason close_timeout{36};
// The server did not answer the opening handshake in time (ws::Client).
inline constexpr net::CloseReason handshake_timeout{37};
}  // namespace close_reason

namespace deadline {
inline constexpr net::Deadline close_timeout{20};
inline constexpr net::Deadline handshake_timeout{21};
}  // namespace deadline

namespace detail {
inline constexpr net::CloseReasonName kCloseReasonNames[] = {
    {close_reason::close_timeout, "close_timeout"},
    {close_reason::handshake_timeout, "handshake_timeout"},
};
inline constexpr net::DeadlineName kDeadlineNames[] = {
    {deadline::close_timeout, "close_timeout", close_reason::close_timeout},
    {deadline::handshake_timeout, "handshake_timeout", close_reason::handshake_timeout},
};
inline const net::NameRegistrar kNames{kCloseReasonNames, kDeadlineNames};
}  // namespace detail

}  // namespace heartwheel::ws
