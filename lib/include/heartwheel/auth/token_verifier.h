// heartwheel/auth/token_verifier.h - JWT verification (RFC 7519 tokens in the
// compact JWS serialization, RFC 7515) for connection and subscription tokens.
//
// What it checks, in this order (first failure wins; error.h has the codes):
//   the token is not empty ....................................... missing_token
//   at most max_token_bytes, three parts separated by '.' ......... malformed
//   the header is strict base64url (no padding, no whitespace,
//   canonical trailing bits) of a JSON object with a string
//   "alg" and no "crit" .......................................... malformed
//   alg is one the key accepts (token_key.h): "none", unknown
//   algs and HS256 against an RSA key are refused here,
//   before any signature is computed ............................. wrong_algorithm
//   the signature and the payload are strict base64url ........... malformed
//   the signature over "header.payload" verifies (OpenSSL EVP;
//   HMAC compared in constant time; ES*: JWS's r||s converted
//   to DER) ..................................................... bad_signature
//   the payload is a JSON object whose known claims have their
//   types (sub/channel strings, exp/nbf/iat numbers, channels an
//   array of channel names), none twice ......................... malformed
//   now < exp + leeway ........................................... expired
//   now >= nbf - leeway .......................................... not_yet_valid
//   subscription tokens: channel == the channel ................. wrong_channel
//                        sub == the connection's user ........... wrong_user
// The payload is parsed only after the signature verified. Claims this layer
// does not know (aud, iss, jti, ...) are ignored. The header's kid, jku, jwk,
// x5u and x5c are ignored too: the key is the configured one, never one the
// token points to.
//
// Cost: the key was parsed once (TokenKey); a verifier keeps its OpenSSL
// contexts (a keyed HMAC per hash, a digest context, a verify context per
// algorithm) and a decode buffer, and reuses them. Per token: one base64url
// pass, one MAC or one digest + public-key verify, one SAX pass of the header
// and of the payload (nlohmann-json, no document built). What a verification
// allocates: the claims' strings (none when the reused claims already have the
// capacity), plus the JSON parser's small internal buffers; docs/BENCHMARKS.md
// has verifications per second and the counts (tools/auth-bench).
//
// Threads: one verifier per thread (it owns mutable scratch state); make one
// per worker loop from one shared TokenKey. Not copyable; movable.
#pragma once

#include <heartwheel/auth/claims.h>
#include <heartwheel/auth/error.h>
#include <heartwheel/auth/token_key.h>
#include <heartwheel/common/time.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

namespace heartwheel::auth {

struct VerifierOptions {
  // Clock skew tolerated between the token's issuer and this server, for exp
  // and nbf. Must be >= 0.
  Duration leeway = std::chrono::seconds(5);
  // Longer tokens are refused as malformed before any work. Must be > 0.
  std::size_t max_token_bytes = 16 * 1024;
};

namespace detail {
class VerifyScratch;  // OpenSSL contexts and the decode buffer (lib/src/auth/)
}

class TokenVerifier {
 public:
  // Throws std::invalid_argument for a negative leeway or a zero
  // max_token_bytes; std::runtime_error if OpenSSL cannot make its contexts.
  explicit TokenVerifier(TokenKey key, VerifierOptions options = {});
  ~TokenVerifier();
  TokenVerifier(TokenVerifier&&) noexcept;
  TokenVerifier& operator=(TokenVerifier&&) noexcept;
  TokenVerifier(const TokenVerifier&) = delete;
  TokenVerifier& operator=(const TokenVerifier&) = delete;

  // Verifies a connection token at wall-clock time `now`. On success returns
  // ok and `claims` holds the token's claims (every field assigned); on a
  // refusal returns the code and message and `claims` is unspecified.
  Error verify_connection(std::string_view token, WallTime now, ConnectionClaims& claims);

  // Verifies a subscription token for `channel` on a connection whose user is
  // `user` (its connection token's sub; "" = anonymous). The token must carry
  // a `channel` claim equal to `channel` and a `sub` equal to `user` (an
  // absent sub is ""). Same results as verify_connection.
  Error verify_subscription(std::string_view token, WallTime now, std::string_view user,
                            std::string_view channel, SubscriptionClaims& claims);

  // How long a token with expiry `expires` stays valid after `now`: exp +
  // leeway - now, the instant verify_* starts refusing it (the connection's
  // expiry deadline); zero or negative when already past; nullopt when the
  // token has no exp (the connection does not expire).
  std::optional<Duration> time_left(const std::optional<WallTime>& expires,
                                    WallTime now) const noexcept;

  const TokenKey& key() const noexcept { return key_; }
  const VerifierOptions& options() const noexcept { return options_; }

 private:
  TokenKey key_;
  VerifierOptions options_;
  std::unique_ptr<detail::VerifyScratch> scratch_;
};

}  // namespace heartwheel::auth
