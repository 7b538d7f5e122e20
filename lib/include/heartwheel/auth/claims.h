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
  // Centrifugo's claims. `b64info` (standard base64 of JSON: this server's
  // clients speak JSON) takes the place of `info` when given. `subs`: more
  // server-side subscriptions, the keys of an object of channel names (their
  // options are not read). `meta`: any JSON the backend attached for itself
  // (sent to its proxies, never to clients), compact text; empty when absent.
  std::vector<std::string> subs;
  std::string meta;
  // `expire_at`: when the connection expires, in place of `exp` (which then
  // only bounds the token's validity); 0 (the epoch): never.
  std::optional<WallTime> expire_at;
};

// A subscription token (a private channel's subscribe).
struct SubscriptionClaims {
  std::string user;                 // `sub`: must equal the connection's user
  std::string channel;              // `channel`: must equal the channel subscribed to
  std::optional<WallTime> expires;  // `exp`
  // `info` (or `b64info`, as in ConnectionClaims): the subscriber's info in
  // this channel (Centrifugo's chan_info), compact JSON text; empty when absent.
  std::string info;
  std::optional<WallTime> expire_at;  // as in ConnectionClaims
};

}  // namespace heartwheel::auth
