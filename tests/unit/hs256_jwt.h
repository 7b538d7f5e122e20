// HS256 JWTs made here with OpenSSL, for tests that need tokens of their own
// claims (auth_centrifugo_claims_test.cpp, chat_centrifuge_*_test.cpp). The
// signature paths themselves are checked against PyJWT's tokens
// (auth_token_test.cpp), so a mistake here cannot hide one there.
#pragma once

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace jwt_test {

// base64url without padding, as JWS wants.
inline std::string base64url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : bytes) {
    acc = acc << 8 | static_cast<std::uint8_t>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 0x3f];
  return out;
}

// An HS256 JWT of `payload` (the claims' JSON text) signed with `secret`.
inline std::string hs256(std::string_view payload, std::string_view secret) {
  const std::string signing =
      base64url(R"({"alg":"HS256","typ":"JWT"})") + "." + base64url(payload);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  REQUIRE(HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
               reinterpret_cast<const unsigned char*>(signing.data()), signing.size(), mac,
               &size) != nullptr);
  return signing + "." + base64url(std::string_view(reinterpret_cast<const char*>(mac), size));
}

}  // namespace jwt_test
