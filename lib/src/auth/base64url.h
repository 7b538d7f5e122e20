// base64url.h (private) - strict base64url decoding for JWS parts (RFC 7515
// section 2: base64url without padding, RFC 4648 section 5).
//
// Strict means one spelling per byte string: only A-Z a-z 0-9 - _, no '='
// padding, no whitespace, a length that is not 1 mod 4, and the unused low
// bits of the last character zero. A lenient decoder would let two different
// tokens carry the same bytes, which breaks "the token is the signed text".
// Not crypto: an alphabet table, no secret-dependent branches needed (the
// input is the public token).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace heartwheel::auth::detail {

// Bytes that `encoded_size` base64url characters decode to, or 0 for a length
// that no strict encoding has (1 mod 4).
constexpr std::size_t base64url_decoded_size(std::size_t encoded_size) noexcept {
  const std::size_t tail = encoded_size % 4;
  if (tail == 1) return 0;
  return encoded_size / 4 * 3 + (tail == 0 ? 0 : tail - 1);
}

// Decodes `in` into out[0..base64url_decoded_size(in.size())). Precondition:
// `out` has that many bytes. Returns false (out's contents unspecified) if
// `in` is not strict base64url; the empty string decodes to nothing.
bool base64url_decode(std::string_view in, unsigned char* out) noexcept;

// Same into `out` (resized; its capacity is reused).
bool base64url_decode(std::string_view in, std::string& out);

// Standard base64 (RFC 4648 section 4: '+' and '/', '=' padding optional),
// as Centrifugo's b64info claims are written; otherwise as strict as
// base64url_decode.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace heartwheel::auth::detail
