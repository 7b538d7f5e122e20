// heartwheel/auth/error.h - the auth layer's error codes, and auth::Error: a
// code with a message a developer can act on.
//
// Every refusal of the layer (a token that does not verify, a channel the
// policy denies) is a value, never an exception: the programs answer it on
// the connection and go on. The code is for programs and counters (stable
// names, code_name()); the message is for the person reading the log or the
// client's error ("token expired 42s ago (exp 1700000000, leeway 5s)").
// Configuration (key files, the channels config, origin patterns, CIDRs) is
// checked when loaded and throws std::invalid_argument instead: that happens
// before a server starts, where an exception is the usage error.
//
// Errors are also std::error_code values in their own category ("auth"), like
// pubsub::errc, for code that carries error codes through callbacks.
// Threads: plain data and pure functions; any thread.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::auth {

enum class errc {
  ok = 0,
  // Tokens (token_verifier.h).
  missing_token = 1,  // no token where one is required (empty string)
  malformed,          // not a compact JWS, bad base64url, bad JSON, a claim of the wrong type
  bad_signature,      // the signature does not verify with the configured key
  wrong_algorithm,    // alg is "none", unknown, or not one the configured key signs
  expired,            // now is at or past exp + leeway
  not_yet_valid,      // now is before nbf - leeway
  wrong_channel,      // a subscription token for another channel
  wrong_user,         // a subscription token whose sub is not the connection's user
  // Channels (channel_policy.h).
  permission_denied,  // the channel policy refuses the operation
  unknown_channel,    // the channel's namespace is not configured
  bad_channel,        // empty, longer than 255 bytes, or a byte outside printable ASCII
};

const std::error_category& auth_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), auth_category()};
}

// The code's stable name, for protocol replies, counters and tests:
// "ok", "missing_token", "malformed", "bad_signature", "wrong_algorithm",
// "expired", "not_yet_valid", "wrong_channel", "wrong_user",
// "permission_denied", "unknown_channel", "bad_channel".
std::string_view code_name(errc e) noexcept;

// A refusal: the code and why. Default-constructed (and every success) is
// errc::ok with an empty message, which allocates nothing.
struct Error {
  errc code = errc::ok;
  std::string message;

  bool ok() const noexcept { return code == errc::ok; }
};

}  // namespace heartwheel::auth

template <>
struct std::is_error_code_enum<heartwheel::auth::errc> : std::true_type {};
