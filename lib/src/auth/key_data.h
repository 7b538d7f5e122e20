// key_data.h (private) - a parsed TokenKey: the OpenSSL objects behind it, and
// the JWS algorithm table.
#pragma once

#include <heartwheel/auth/token_key.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <openssl/evp.h>

namespace heartwheel::auth::detail {

// The JWS algorithms this layer knows (RFC 7518 3.1).
enum class Alg : std::uint8_t { HS256, HS384, HS512, RS256, RS384, RS512, ES256, ES384, ES512 };

// The algorithm `name` names, exactly (case-sensitive, as RFC 7515 4.1.1 says).
std::optional<Alg> parse_alg(std::string_view name) noexcept;
std::string_view alg_name(Alg alg) noexcept;
KeyKind alg_kind(Alg alg) noexcept;
// 0, 1, 2 for SHA-256, SHA-384, SHA-512.
inline std::size_t hash_index(Alg alg) noexcept { return static_cast<std::size_t>(alg) % 3; }

struct KeyData {
  KeyData() = default;
  KeyData(const KeyData&) = delete;
  KeyData& operator=(const KeyData&) = delete;
  ~KeyData();

  KeyKind kind = KeyKind::hmac_secret;
  std::string secret;           // hmac_secret only; wiped when destroyed
  EVP_PKEY* pkey = nullptr;     // rsa_public, ecdsa_public
  Alg ecdsa_alg = Alg::ES256;   // ecdsa_public: the one the curve allows
  std::size_t ecdsa_coordinate_bytes = 0;  // 32, 48, 66: half a JWS ES signature
  int bits = 0;                 // key size (RSA modulus, EC field)
  std::string curve;            // "P-256", ...
  // Fetched once (an EVP fetch takes a lock and a lookup): shared, read-only.
  EVP_MAC* hmac = nullptr;
  std::array<EVP_MD*, 3> digests{};  // SHA-256, SHA-384, SHA-512
};

}  // namespace heartwheel::auth::detail
