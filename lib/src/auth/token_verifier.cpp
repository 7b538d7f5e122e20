// JWT verification: the order of checks in token_verifier.h.
#include <heartwheel/auth/token_verifier.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base64url.h"
#include "jws_json.h"
#include "key_data.h"
#include "verify_scratch.h"

namespace heartwheel::auth {

namespace detail {
// The header and payload parts and the signature, split from a token.
struct SignedToken {
  std::string_view header;   // base64url
  std::string_view payload;  // base64url
  std::string_view signature;
  std::string_view signing_input;  // header.payload, what the signature covers
};
}  // namespace detail

namespace {

using detail::Alg;

// Signatures decode into the stack: the largest is RSA-8192's 1024 bytes.
constexpr std::size_t kMaxSignatureBytes = 1024;

Error refuse(errc code, std::string message) { return Error{code, std::move(message)}; }

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string key_kind_name(KeyKind kind) {
  switch (kind) {
    case KeyKind::hmac_secret: return "HMAC secret";
    case KeyKind::rsa_public: return "RSA public key";
    case KeyKind::ecdsa_public: return "EC public key";
  }
  return "key";
}

// "42s" / "1.5s" for messages.
std::string seconds_text(std::chrono::duration<double> d) {
  const double s = d.count();
  char buf[32];
  if (std::fabs(s - std::round(s)) < 1e-9)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else
    std::snprintf(buf, sizeof buf, "%.3gs", s);
  return buf;
}

std::string numeric_date_text(WallTime t) {
  const double s = std::chrono::duration<double>(t.time_since_epoch()).count();
  char buf[32];
  if (std::fabs(s - std::round(s)) < 1e-9)
    std::snprintf(buf, sizeof buf, "%.0f", s);
  else
    std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

}  // namespace

TokenVerifier::TokenVerifier(TokenKey key, VerifierOptions options)
    : key_(std::move(key)), options_(options) {
  if (options_.leeway.count() < 0)
    throw std::invalid_argument("token leeway must not be negative");
  if (options_.max_token_bytes == 0)
    throw std::invalid_argument("max_token_bytes must be greater than 0");
  scratch_ = std::make_unique<detail::VerifyScratch>(key_.data());
}

TokenVerifier::~TokenVerifier() = default;
TokenVerifier::TokenVerifier(TokenVerifier&&) noexcept = default;
TokenVerifier& TokenVerifier::operator=(TokenVerifier&&) noexcept = default;

namespace {

// The header: strict base64url of a JSON object whose alg the key accepts.
// Every token one issuer signs with one key has the same header, byte for
// byte, so the last accepted one is remembered and a token repeating it
// skips the decode and the parse.
Error check_header(std::string_view header, const TokenKey& key, detail::VerifyScratch& scratch,
                   Alg& alg) {
  if (!header.empty() && header == scratch.accepted_header) {
    alg = scratch.accepted_alg;
    return {};
  }
  if (header.empty() || !detail::base64url_decode(header, scratch.decoded))
    return refuse(errc::malformed,
                  "the header is not base64url (RFC 7515: no padding, no whitespace)");
  detail::HeaderAlg header_alg;
  if (Error e = detail::read_header(scratch.decoded, header_alg); !e.ok()) return e;
  const std::string_view name = header_alg.name();
  const auto accepted = [&] {
    return key_kind_name(key.kind()) + " accepts " + std::string(key.algorithms());
  };
  const auto shown = [&] { return quoted(name) + (header_alg.truncated ? "..." : ""); };
  if (name == "none")
    return refuse(errc::wrong_algorithm,
                  "alg \"none\" (an unsigned token) is never accepted; the configured " +
                      accepted());
  const auto parsed = header_alg.truncated ? std::nullopt : detail::parse_alg(name);
  if (!parsed)
    return refuse(errc::wrong_algorithm,
                  "alg " + shown() + " is not supported; the configured " + accepted());
  if (!key.accepts(name))
    return refuse(errc::wrong_algorithm,
                  "alg " + shown() + " does not match the configured " +
                      key_kind_name(key.kind()) + ", which accepts " +
                      std::string(key.algorithms()));
  alg = *parsed;
  scratch.accepted_header.assign(header);
  scratch.accepted_alg = alg;
  return {};
}

// Everything up to and including the signature (the first five rows of the
// table in token_verifier.h). On success `token` holds the parts.
Error check_signed(std::string_view text, const TokenKey& key, const VerifierOptions& options,
                   detail::VerifyScratch& scratch, detail::SignedToken& token) {
  if (text.empty()) return refuse(errc::missing_token, "no token");
  if (text.size() > options.max_token_bytes)
    return refuse(errc::malformed, "token is " + std::to_string(text.size()) +
                                       " bytes, more than the " +
                                       std::to_string(options.max_token_bytes) + " accepted");
  const std::size_t dot1 = text.find('.');
  const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : text.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || text.find('.', dot2 + 1) != std::string_view::npos) {
    std::size_t dots = 0;
    for (const char c : text) dots += c == '.';
    return refuse(errc::malformed,
                  "a JWT has three base64url parts separated by '.'; this token has " +
                      std::to_string(dots + 1));
  }
  token.header = text.substr(0, dot1);
  token.payload = text.substr(dot1 + 1, dot2 - dot1 - 1);
  token.signature = text.substr(dot2 + 1);
  token.signing_input = text.substr(0, dot2);

  Alg alg{};
  if (Error e = check_header(token.header, key, scratch, alg); !e.ok()) return e;

  unsigned char signature[kMaxSignatureBytes];
  const std::size_t signature_size = detail::base64url_decoded_size(token.signature.size());
  if (token.signature.empty() || signature_size == 0 || signature_size > kMaxSignatureBytes ||
      !detail::base64url_decode(token.signature, signature))
    return refuse(errc::malformed, "the signature is not base64url of 1 to " +
                                       std::to_string(kMaxSignatureBytes) + " bytes");
  // Decoded before the signature is checked, so a mangled token (a line
  // break, padding) is called malformed rather than forged; parsed only after.
  if (!detail::base64url_decode(token.payload, scratch.decoded))
    return refuse(errc::malformed,
                  "the payload is not base64url (RFC 7515: no padding, no whitespace)");
  if (!scratch.verify(alg, token.signing_input, signature, signature_size))
    return refuse(errc::bad_signature, "the signature does not verify with the configured " +
                                           key_kind_name(key.kind()) + " (alg " +
                                           std::string(detail::alg_name(alg)) + ")");
  return {};
}

// exp and nbf against `now`, with the leeway.
Error check_times(const std::optional<WallTime>& expires, const std::optional<WallTime>& not_before,
                  WallTime now, Duration leeway) {
  const auto skew = std::chrono::duration_cast<WallTime::duration>(leeway);
  if (expires && now >= *expires + skew)
    return refuse(errc::expired, "token expired " + seconds_text(now - *expires) + " ago (exp " +
                                     numeric_date_text(*expires) + ", leeway " +
                                     seconds_text(skew) + "); get a fresh token");
  if (not_before && now < *not_before - skew)
    return refuse(errc::not_yet_valid,
                  "token not valid for another " + seconds_text(*not_before - now) + " (nbf " +
                      numeric_date_text(*not_before) + ", leeway " + seconds_text(skew) +
                      "); is the issuer's clock ahead?");
  return {};
}

// `b64info` (standard base64, padded or not), when given, replaces `info`:
// its bytes must be JSON, the only info a JSON client can be shown.
Error decode_b64info(std::string_view b64info, std::string& info) {
  if (b64info.empty()) return {};
  std::string bytes;
  if (!detail::base64_decode(b64info, bytes))
    return refuse(errc::malformed, "claim \"b64info\" is not base64");
  nlohmann::json value = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded())
    return refuse(errc::malformed, "claim \"b64info\" is not base64 of JSON (clients speak JSON)");
  info = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return {};
}

}  // namespace

Error TokenVerifier::verify_connection(std::string_view text, WallTime now,
                                       ConnectionClaims& claims) {
  detail::SignedToken token;
  if (Error e = check_signed(text, key_, options_, *scratch_, token); !e.ok()) return e;
  std::optional<WallTime> not_before;
  detail::ClaimTargets targets;
  targets.user = &claims.user;
  targets.info = &claims.info;
  targets.channels = &claims.channels;
  targets.expires = &claims.expires;
  targets.not_before = &not_before;
  targets.issued_at = &claims.issued_at;
  std::string b64info;
  targets.b64info = &b64info;
  targets.meta = &claims.meta;
  targets.subs = &claims.subs;
  targets.expire_at = &claims.expire_at;
  if (Error e = detail::read_claims(scratch_->decoded, targets); !e.ok()) return e;
  if (Error e = decode_b64info(b64info, claims.info); !e.ok()) return e;
  return check_times(claims.expires, not_before, now, options_.leeway);
}

Error TokenVerifier::verify_subscription(std::string_view text, WallTime now,
                                         std::string_view user, std::string_view channel,
                                         SubscriptionClaims& claims) {
  detail::SignedToken token;
  if (Error e = check_signed(text, key_, options_, *scratch_, token); !e.ok()) return e;
  std::optional<WallTime> not_before;
  detail::ClaimTargets targets;
  targets.user = &claims.user;
  targets.channel = &claims.channel;
  targets.expires = &claims.expires;
  targets.not_before = &not_before;
  targets.info = &claims.info;
  std::string b64info;
  targets.b64info = &b64info;
  targets.expire_at = &claims.expire_at;
  if (Error e = detail::read_claims(scratch_->decoded, targets); !e.ok()) return e;
  if (Error e = decode_b64info(b64info, claims.info); !e.ok()) return e;
  if (Error e = check_times(claims.expires, not_before, now, options_.leeway); !e.ok()) return e;
  if (claims.channel.empty())
    return refuse(errc::malformed, "a subscription token needs a \"channel\" claim");
  if (claims.channel != channel)
    return refuse(errc::wrong_channel, "the subscription token is for channel " +
                                           quoted(std::string_view(claims.channel)) + ", not " +
                                           quoted(channel));
  if (claims.user != user)
    return refuse(errc::wrong_user, "the subscription token is for user " +
                                        quoted(std::string_view(claims.user)) +
                                        ", not this connection's user " + quoted(user));
  return {};
}

std::optional<Duration> TokenVerifier::time_left(const std::optional<WallTime>& expires,
                                                 WallTime now) const noexcept {
  if (!expires) return std::nullopt;
  return std::chrono::duration_cast<Duration>(*expires - now) + options_.leeway;
}

}  // namespace heartwheel::auth
