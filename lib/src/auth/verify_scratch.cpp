// Signature checks with OpenSSL EVP on reused contexts (verify_scratch.h).
#include "verify_scratch.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/rsa.h>

#include <stdexcept>
#include <string>

namespace heartwheel::auth::detail {

namespace {

[[noreturn]] void openssl_failed(const char* what) {
  ERR_clear_error();
  throw std::runtime_error(std::string("OpenSSL: ") + what + " failed");
}

constexpr const char* kDigestNames[3] = {"SHA256", "SHA384", "SHA512"};

// JWS's ES signature is r||s, each coordinate_bytes big-endian (RFC 7518
// 3.4); EVP wants the DER ECDSA-Sig-Value. OpenSSL builds the DER. Returns
// its size in `der` (at most 2 * (66 + 3) + 3 bytes for P-521), 0 on failure.
std::size_t raw_to_der(const unsigned char* raw, std::size_t coordinate_bytes,
                       unsigned char* der, std::size_t der_capacity) {
  ECDSA_SIG* sig = ECDSA_SIG_new();
  if (!sig) return 0;
  BIGNUM* r = BN_bin2bn(raw, static_cast<int>(coordinate_bytes), nullptr);
  BIGNUM* s = BN_bin2bn(raw + coordinate_bytes, static_cast<int>(coordinate_bytes), nullptr);
  if (!r || !s || !ECDSA_SIG_set0(sig, r, s)) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return 0;
  }
  std::size_t size = 0;
  const int needed = i2d_ECDSA_SIG(sig, nullptr);
  if (needed > 0 && static_cast<std::size_t>(needed) <= der_capacity) {
    unsigned char* p = der;
    const int written = i2d_ECDSA_SIG(sig, &p);
    if (written > 0) size = static_cast<std::size_t>(written);
  }
  ECDSA_SIG_free(sig);
  return size;
}

}  // namespace

VerifyScratch::VerifyScratch(const KeyData& key) : key_(key) {
  if (key.kind == KeyKind::hmac_secret) {
    for (std::size_t i = 0; i < 3; ++i) {
      mac_[i] = EVP_MAC_CTX_new(key.hmac);
      if (!mac_[i]) openssl_failed("EVP_MAC_CTX_new");
      OSSL_PARAM params[] = {
          OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                           const_cast<char*>(kDigestNames[i]), 0),
          OSSL_PARAM_construct_end()};
      if (!EVP_MAC_init(mac_[i], reinterpret_cast<const unsigned char*>(key.secret.data()),
                        key.secret.size(), params))
        openssl_failed("EVP_MAC_init");
    }
    return;
  }
  digest_ = EVP_MD_CTX_new();
  if (!digest_) openssl_failed("EVP_MD_CTX_new");
  for (std::size_t i = 0; i < 3; ++i) {
    if (key.kind == KeyKind::ecdsa_public && i != hash_index(key.ecdsa_alg)) continue;
    verify_[i] = EVP_PKEY_CTX_new_from_pkey(nullptr, key.pkey, nullptr);
    if (!verify_[i]) openssl_failed("EVP_PKEY_CTX_new_from_pkey");
    if (EVP_PKEY_verify_init(verify_[i]) <= 0) openssl_failed("EVP_PKEY_verify_init");
    if (key.kind == KeyKind::rsa_public &&
        EVP_PKEY_CTX_set_rsa_padding(verify_[i], RSA_PKCS1_PADDING) <= 0)
      openssl_failed("EVP_PKEY_CTX_set_rsa_padding");
    if (EVP_PKEY_CTX_set_signature_md(verify_[i], key.digests[i]) <= 0)
      openssl_failed("EVP_PKEY_CTX_set_signature_md");
  }
}

VerifyScratch::~VerifyScratch() {
  for (EVP_MAC_CTX* c : mac_) EVP_MAC_CTX_free(c);
  EVP_MD_CTX_free(digest_);
  for (EVP_PKEY_CTX* c : verify_) EVP_PKEY_CTX_free(c);
}

bool VerifyScratch::verify(Alg alg, std::string_view input, const unsigned char* sig,
                           std::size_t n) {
  const bool ok = alg_kind(alg) == KeyKind::hmac_secret ? verify_hmac(alg, input, sig, n)
                                                        : verify_public(alg, input, sig, n);
  // A failed verify leaves reasons on OpenSSL's thread-local error queue; a
  // bad token is our answer, not an OpenSSL error, so nothing may linger.
  if (!ok) ERR_clear_error();
  return ok;
}

bool VerifyScratch::verify_hmac(Alg alg, std::string_view input, const unsigned char* sig,
                                std::size_t n) {
  EVP_MAC_CTX* ctx = mac_[hash_index(alg)];
  unsigned char mac[EVP_MAX_MD_SIZE];
  std::size_t mac_size = 0;
  if (!EVP_MAC_init(ctx, nullptr, 0, nullptr) ||
      !EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(input.data()), input.size()) ||
      !EVP_MAC_final(ctx, mac, &mac_size, sizeof mac))
    return false;
  // The length is public (it follows from alg); the bytes are compared in
  // constant time so a forger learns nothing from how long a refusal took.
  const bool equal = n == mac_size && CRYPTO_memcmp(mac, sig, mac_size) == 0;
  OPENSSL_cleanse(mac, sizeof mac);
  return equal;
}

bool VerifyScratch::verify_public(Alg alg, std::string_view input, const unsigned char* sig,
                                  std::size_t n) {
  const std::size_t h = hash_index(alg);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (!EVP_DigestInit_ex(digest_, key_.digests[h], nullptr) ||
      !EVP_DigestUpdate(digest_, input.data(), input.size()) ||
      !EVP_DigestFinal_ex(digest_, digest, &digest_size))
    return false;
  if (key_.kind == KeyKind::rsa_public)
    return EVP_PKEY_verify(verify_[h], sig, n, digest, digest_size) == 1;
  if (n != 2 * key_.ecdsa_coordinate_bytes) return false;
  unsigned char der[2 * (66 + 3) + 3];
  const std::size_t der_size = raw_to_der(sig, key_.ecdsa_coordinate_bytes, der, sizeof der);
  if (der_size == 0) return false;
  return EVP_PKEY_verify(verify_[h], der, der_size, digest, digest_size) == 1;
}

}  // namespace heartwheel::auth::detail
