// heartwheel/redis/error.h - the Redis link's error codes.
//
// Errors are std::error_code values in their own category ("redis"), beside
// heartwheel::errc (timed_out, limit_reached, protocol_error, frame_too_large
// also reach Redis callers; see client.h, "Outcomes"). Each says what happened
// to the command, so a caller can map it to an answer (the HTTP layer: 503
// for not_connected / buffer_full / disconnected, 502 for server_error).
// Threads: plain values and pure functions; any thread.
#pragma once

#include <system_error>

namespace heartwheel::redis {

enum class errc {
  ok = 0,
  // Returned by Client::command: nothing was sent.
  not_connected = 1,  // no connection to Redis and ClientOptions::max_buffered is 0
  buffer_full,        // no connection and the buffer holds max_buffered commands (or bytes)
  stopped,            // the client is stopped (never started, or stop() was called)
  not_allowed,        // a command that would break the reply order on a command link
                      // (SUBSCRIBE, MONITOR, HELLO, RESET, CLIENT REPLY): use redis::Subscriber
  // Given to a command's callback.
  disconnected,  // the connection dropped after the command was sent: it may or may not have run
  server_error,  // Redis answered with an error reply; its text is in the Reply
  not_replicated,  // a durable write ran on the master, but WAIT saw fewer replicas than
                   // ClientOptions::wait_replicas acknowledge it in time: a failover may lose it
  too_many_redirects,  // Redis Cluster kept redirecting (MOVED / ASK) past
                       // ClusterOptions::max_redirects; the last error's text is in the Reply
  // Given to LinkOptions::on_error (auth.h).
  auth_failed,  // Redis refused the link's AUTH, or answered NOAUTH (it wants a password)
  // redis::Lock (lock.h).
  already_locked,  // returned: this Lock already holds or waits for that name (not reentrant)
  lock_not_held,   // returned by unlock(): this Lock neither holds nor waits for that name
  lock_lost,       // the lock is no longer ours: its lease ran out, or another holder has it
};

const std::error_category& redis_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), redis_category()};
}

}  // namespace heartwheel::redis

template <>
struct std::is_error_code_enum<heartwheel::redis::errc> : std::true_type {};
