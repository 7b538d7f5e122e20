// verify_scratch.h (private) - a TokenVerifier's reusable state: the OpenSSL
// contexts, keyed or initialised once, and the buffer JWS parts decode into.
//
// Why reuse: making a context per token costs allocations and, for an
// unfetched algorithm, a locked provider lookup; an HMAC context keyed once is
// re-initialised per token with EVP_MAC_init(ctx, NULL, ...), which keeps the
// key (the inner and outer pads are not recomputed). One per thread.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include <openssl/evp.h>

#include "key_data.h"

namespace heartwheel::auth::detail {

class VerifyScratch {
 public:
  // Throws std::runtime_error if OpenSSL cannot make or initialise a context.
  explicit VerifyScratch(const KeyData& key);
  ~VerifyScratch();
  VerifyScratch(const VerifyScratch&) = delete;
  VerifyScratch& operator=(const VerifyScratch&) = delete;

  // True if `signature` is `alg`'s signature of `signing_input` under the
  // key. Precondition: the key accepts `alg`. HMACs are compared in constant
  // time (CRYPTO_memcmp); an ES* signature is JWS's r||s, converted to DER.
  bool verify(Alg alg, std::string_view signing_input, const unsigned char* signature,
              std::size_t signature_size);

  std::string decoded;  // the current part's bytes (header, then payload)
  // The last header (base64url, as in the token) that passed every header
  // check, and its alg: the next token from the same issuer repeats it.
  std::string accepted_header;
  Alg accepted_alg = Alg::HS256;

 private:
  bool verify_hmac(Alg alg, std::string_view input, const unsigned char* sig, std::size_t n);
  bool verify_public(Alg alg, std::string_view input, const unsigned char* sig, std::size_t n);

  const KeyData& key_;
  std::array<EVP_MAC_CTX*, 3> mac_{};       // HMAC keyed with the secret, per hash
  EVP_MD_CTX* digest_ = nullptr;            // RSA/ECDSA: the digest of the input
  std::array<EVP_PKEY_CTX*, 3> verify_{};   // RSA: per hash; ECDSA: the curve's alg
};

}  // namespace heartwheel::auth::detail
