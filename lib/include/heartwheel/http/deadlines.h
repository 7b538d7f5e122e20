// heartwheel/http/deadlines.h - HTTP's deadline kinds and close reasons.
//
// HTTP keeps its read-phase timeouts in the connection's deadline set (one
// claimed slot at a time: the phases are exclusive) and closes with its own
// reasons beside net's (request_timeout, write_stall, protocol_error, ...).
// The numbers are HTTP's for good (lib/src/net/README.md, "Numbers taken"):
// statistics of every process merge by them. Including this header
// registers the names (heartwheel/net/names.h), which are the spellings in
// JSON statistics and metrics (reason="header_timeout", kind="...").
//
//   deadline kind      | phase                                | closes with
//   -------------------+--------------------------------------+------------------
//   header_timeout 16  | a request's head (after its 1st byte)| header_timeout 32
//   body_timeout 17    | a request body making no progress    | body_timeout 33
//   keepalive_timeout 18 | before the first byte, between     | keepalive_timeout 34
//                      | requests                             |
//
// Threads: plain values, any thread.
#pragma once

#include <heartwheel/net/names.h>

namespace heartwheel::http {

namespace close_reason {
inline constexpr net::CloseReason header_timeout{32};  // a request head did not arrive in time
inline constexpr net::CloseReason body_timeout{33};    // a request body stopped making progress
// Idle before the first request or between requests (keep-alive).
inline constexpr net::CloseReason keepalive_timeout{34};
}  // namespace close_reason

namespace deadline {
inline constexpr net::Deadline header_timeout{16};
inline constexpr net::Deadline body_timeout{17};
inline constexpr net::Deadline keepalive_timeout{18};
}  // namespace deadline

namespace detail {
inline constexpr net::CloseReasonName kCloseReasonNames[] = {
    {close_reason::header_timeout, "header_timeout"},
    {close_reason::body_timeout, "body_timeout"},
    {close_reason::keepalive_timeout, "keepalive_timeout"},
};
inline constexpr net::DeadlineName kDeadlineNames[] = {
    {deadline::header_timeout, "header_timeout", close_reason::header_timeout},
    {deadline::body_timeout, "body_timeout", close_reason::body_timeout},
    {deadline::keepalive_timeout, "keepalive_timeout", close_reason::keepalive_timeout},
};
inline const net::NameRegistrar kNames{kCloseReasonNames, kDeadlineNames};
}  // namespace detail

}  // namespace heartwheel::http
