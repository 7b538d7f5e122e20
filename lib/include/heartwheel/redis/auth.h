// heartwheel/redis/auth.h - the AUTH a Redis link sends first on every
// connection, and how it reads a refusal.
//
// A link with LinkOptions::password set (link_options.h) sends
//   AUTH user password   (an ACL user, Redis 6+), or
//   AUTH password        (no user: requirepass, the "default" user)
// before its setup commands, on every connection it opens: each reconnect,
// each node and replica a cluster link talks to, the connection reading the
// slot map, every subscriber connection. Its reply is the first the link
// reads. A refusal closes that connection (CloseReason::protocol_error,
// errc::auth_failed, counted in LinkStats::auth_failures, reported to
// on_error with auth_failure_detail()), and the connector tries again after
// its backoff: a connection closed within stable_after counts as a failed
// attempt, so the retries slow down to backoff_max, never a tight loop.
// Refusals are:
//   - any error reply to the AUTH (WRONGPASS, a user that does not exist or
//     is off, "AUTH ... called without any password configured": the
//     server has no password, so the link's configuration is wrong);
//   - a NOAUTH error reply to any later command (the link has no password,
//     or the server's was set after the AUTH): a link that may not run
//     commands is closed and retried rather than failing every command.
// The password never appears in a detail, a log line or a stats field; it
// is in the AUTH command's bytes only.
//
// Threads: pure functions; any thread.
#pragma once

#include <heartwheel/redis/command.h>
#include <heartwheel/redis/reply.h>

#include <string>
#include <string_view>

namespace heartwheel::redis {

// AUTH password, or AUTH user password when `user` is not empty.
// Precondition: `password` is not empty (an empty one is a configuration
// error: LinkOptions::validate refuses a user without a password).
Command auth_command(std::string_view user, std::string_view password);

// True for a NOAUTH error reply ("NOAUTH Authentication required."): the
// server wants a password the link did not give.
bool is_noauth(const Reply& reply) noexcept;

// The text on_error gets for a refusal: the server's address, the user (or
// "the default user") and Redis's reason, e.g.
//   "AUTH refused by 127.0.0.1:6379 for user push: WRONGPASS invalid
//    username-password pair or user is disabled."
// `address` is HOST:PORT; `reason` is the error reply's text.
std::string auth_failure_detail(std::string_view address, std::string_view user,
                                std::string_view reason);

}  // namespace heartwheel::redis
