// heartwheel/auth/claims.h - what a verified token says.
//
// JWT times (exp, nbf, iat) are wall-clock instants (seconds since the Unix
// epoch, RFC 7519 NumericDate, fractions allowed); WallTime carries them.
// Values beyond +-9e9 s (the years 1684 and 2255) are held at that bound: the
// system clock's nanoseconds end in 2262, and "far future" needs no more. A
// program turns an expiry into a deadline on its steady clock with
// TokenVerifier::time_left().
//
// The structs are reused: a verifier assigns into the strings and vectors of
// the one it is given, so a connection that refreshes its token reuses their
// capacity. Threads: plain data.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace heartwheel::auth {

using WallTime = std::chrono::system_clock::time_point;

// A connection token (the client's first message, and each refresh).
struct ConnectionClaims {
  std::string user;                  // `sub`; empty (or absent) = anonymous
  std::optional<WallTime> expires;   // `exp`: the connection ends then unless refreshed
  std::optional<WallTime> issued_at; // `iat`, informational (not checked)
  // `info`: any JSON the backend attached (shown with presence and
  // publications), as compact JSON text; empty when absent.
  std::string info;
  // `channels`: server-side subscriptions the backend grants (each a valid
  // channel name); empty when absent.
  std::vector<std::string> channels;
};

// A subscription token (a private channel's subscribe).
struct SubscriptionClaims {
  std::string user;                 // `sub`: must equal the connection's user
  std::string channel;              // `channel`: must equal the channel subscribed to
  std::optional<WallTime> expires;  // `exp`
};

}  // namespace heartwheel::auth
