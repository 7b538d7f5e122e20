// TLS 1.3 record cryptography on per-thread OpenSSL contexts (see
// record_crypto.h).
#include "record_crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <climits>
#include <cstring>

namespace heartwheel::tls::detail {

namespace {

constexpr std::size_t kSuites = 3;

std::size_t index_of(Suite suite) noexcept { return static_cast<std::size_t>(suite); }

// Fetched once per process and never freed, like the session BIO's method:
// a fetch walks OpenSSL's provider tables (microseconds), a record must not.
EVP_CIPHER* cipher(Suite suite) noexcept {
  static EVP_CIPHER* const ciphers[kSuites] = {
      EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr),
      EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr),
      EVP_CIPHER_fetch(nullptr, "ChaCha20-Poly1305", nullptr),
  };
  return ciphers[index_of(suite)];
}

EVP_MAC* hmac() noexcept {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

// The thread's HMAC context for the suite's hash (SHA-256 or SHA-384), made
// once: EVP_KDF's HKDF fetched the digest by name on every call (2.2 us a
// derivation, four a handshake); a keyed HMAC on a kept context is ~0.5 us.
EVP_MAC_CTX* hmac_context(Suite suite) noexcept {
  struct Contexts {
    EVP_MAC_CTX* ctx[2] = {};
    Contexts() = default;
    Contexts(const Contexts&) = delete;
    Contexts& operator=(const Contexts&) = delete;
    ~Contexts() {
      for (EVP_MAC_CTX* c : ctx) EVP_MAC_CTX_free(c);
    }
  };
  thread_local Contexts contexts;
  const bool sha384 = suite == Suite::aes_256_gcm_sha384;
  EVP_MAC_CTX*& c = contexts.ctx[sha384 ? 1 : 0];
  if (c == nullptr && hmac() != nullptr) {
    c = EVP_MAC_CTX_new(hmac());
    char name256[] = "SHA256";
    char name384[] = "SHA384";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha384 ? name384 : name256, 0),
        OSSL_PARAM_construct_end()};
    if (c != nullptr && EVP_MAC_CTX_set_params(c, params) != 1) {
      EVP_MAC_CTX_free(c);
      c = nullptr;
    }
  }
  return c;
}

// One context per suite and direction on this thread, and the key it holds.
struct ThreadContexts {
  EVP_CIPHER_CTX* ctx[kSuites][2] = {};
  std::uint8_t key[kSuites][2][kMaxKeySize] = {};
  bool keyed[kSuites][2] = {};

  ThreadContexts() = default;
  ThreadContexts(const ThreadContexts&) = delete;
  ThreadContexts& operator=(const ThreadContexts&) = delete;
  ~ThreadContexts() {
    for (auto& pair : ctx) {
      for (EVP_CIPHER_CTX* c : pair) EVP_CIPHER_CTX_free(c);
    }
    OPENSSL_cleanse(key, sizeof key);
  }
};

// The thread's context for `suite` in direction `seal`, set to `key` and
// `nonce`; nullptr if OpenSSL failed.
EVP_CIPHER_CTX* keyed_context(Suite suite, bool seal, const std::uint8_t* key,
                              const std::uint8_t* nonce) noexcept {
  thread_local ThreadContexts contexts;
  const std::size_t s = index_of(suite);
  const int d = seal ? 1 : 0;
  EVP_CIPHER_CTX*& c = contexts.ctx[s][d];
  if (!c) {
    c = EVP_CIPHER_CTX_new();
    if (!c || !cipher(suite) ||
        EVP_CipherInit_ex2(c, cipher(suite), nullptr, nullptr, d, nullptr) != 1) {
      EVP_CIPHER_CTX_free(c);
      c = nullptr;
      return nullptr;
    }
  }
  const std::size_t n = key_size(suite);
  bool& keyed = contexts.keyed[s][d];
  std::uint8_t* held = contexts.key[s][d];
  const bool same = keyed && CRYPTO_memcmp(held, key, n) == 0;
  if (EVP_CipherInit_ex2(c, nullptr, same ? nullptr : key, nonce, d, nullptr) != 1) {
    keyed = false;
    return nullptr;
  }
  if (!same) {
    std::memcpy(held, key, n);
    keyed = true;
  }
  return c;
}

const unsigned char* bytes(std::string_view s) noexcept {
  return reinterpret_cast<const unsigned char*>(s.data());
}

int length(std::string_view s) noexcept { return static_cast<int>(s.size()); }

}  // namespace

std::optional<Suite> suite_of(const SSL_CIPHER* c) noexcept {
  if (!c) return std::nullopt;
  switch (SSL_CIPHER_get_protocol_id(c)) {
    case 0x1301:
      return Suite::aes_128_gcm_sha256;
    case 0x1302:
      return Suite::aes_256_gcm_sha384;
    case 0x1303:
      return Suite::chacha20_poly1305_sha256;
    default:
      return std::nullopt;
  }
}

std::size_t secret_size(Suite suite) noexcept {
  return suite == Suite::aes_256_gcm_sha384 ? 48 : 32;
}

std::size_t key_size(Suite suite) noexcept { return suite == Suite::aes_128_gcm_sha256 ? 16 : 32; }

const char* suite_name(Suite suite) noexcept {
  switch (suite) {
    case Suite::aes_128_gcm_sha256:
      return "TLS_AES_128_GCM_SHA256";
    case Suite::aes_256_gcm_sha384:
      return "TLS_AES_256_GCM_SHA384";
    case Suite::chacha20_poly1305_sha256:
      return "TLS_CHACHA20_POLY1305_SHA256";
  }
  return "";
}

bool expand_label(Suite suite, const std::uint8_t* secret, std::string_view label,
                  std::uint8_t* out, std::size_t size) noexcept {
  // struct { uint16 length; opaque label<7..255> = "tls13 " + Label;
  //          opaque context<0..255> = ""; } HkdfLabel;
  constexpr std::string_view kPrefix = "tls13 ";
  std::array<unsigned char, 2 + 1 + 255 + 1 + 1> info{};
  const std::size_t label_size = kPrefix.size() + label.size();
  if (size > 255 || label_size > 255) return false;
  std::size_t n = 0;
  info[n++] = 0;
  info[n++] = static_cast<unsigned char>(size);
  info[n++] = static_cast<unsigned char>(label_size);
  std::memcpy(&info[n], kPrefix.data(), kPrefix.size());
  n += kPrefix.size();
  std::memcpy(&info[n], label.data(), label.size());
  n += label.size();
  info[n++] = 0;  // the empty context

  info[n++] = 1;  // HKDF-Expand's counter: one block is enough (size <= the hash's output)

  // HKDF-Expand (RFC 5869 2.3) for at most one block: T(1) = HMAC(secret, info | 0x01).
  std::uint8_t block[EVP_MAX_MD_SIZE];
  std::size_t got = 0;
  EVP_MAC_CTX* c = hmac_context(suite);
  const bool ok = c != nullptr && size <= secret_size(suite) &&
                  EVP_MAC_init(c, secret, secret_size(suite), nullptr) == 1 &&
                  EVP_MAC_update(c, info.data(), n) == 1 &&
                  EVP_MAC_final(c, block, &got, sizeof block) == 1 && got >= size;
  if (ok) std::memcpy(out, block, size);
  OPENSSL_cleanse(block, sizeof block);
  OPENSSL_cleanse(info.data(), info.size());
  return ok;
}

bool seal(Suite suite, const std::uint8_t* key, const std::uint8_t* nonce, std::string_view aad,
          std::string_view data, std::uint8_t content_type, std::uint8_t* out) noexcept {
  EVP_CIPHER_CTX* c = keyed_context(suite, true, key, nonce);
  if (!c || data.size() >= INT_MAX) return false;
  int n = 0, total = 0;
  if (EVP_EncryptUpdate(c, nullptr, &n, bytes(aad), length(aad)) != 1) return false;
  if (!data.empty()) {
    if (EVP_EncryptUpdate(c, out, &n, bytes(data), length(data)) != 1) return false;
    total += n;
  }
  if (EVP_EncryptUpdate(c, out + total, &n, &content_type, 1) != 1) return false;
  total += n;
  if (EVP_EncryptFinal_ex(c, out + total, &n) != 1) return false;
  total += n;
  // A stream cipher: everything came out at once, the tag follows it.
  if (static_cast<std::size_t>(total) != data.size() + 1) return false;
  return EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, kTagSize, out + total) == 1;
}

bool open(Suite suite, const std::uint8_t* key, const std::uint8_t* nonce, std::string_view aad,
          std::string_view sealed, std::uint8_t* out) noexcept {
  if (sealed.size() < kTagSize || sealed.size() >= INT_MAX) return false;
  EVP_CIPHER_CTX* c = keyed_context(suite, false, key, nonce);
  if (!c) return false;
  const std::string_view body = sealed.substr(0, sealed.size() - kTagSize);
  std::uint8_t tag[kTagSize];
  std::memcpy(tag, sealed.data() + body.size(), kTagSize);
  int n = 0, total = 0;
  if (EVP_DecryptUpdate(c, nullptr, &n, bytes(aad), length(aad)) != 1) return false;
  if (!body.empty()) {
    if (EVP_DecryptUpdate(c, out, &n, bytes(body), length(body)) != 1) return false;
    total += n;
  }
  if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, kTagSize, tag) != 1) return false;
  if (EVP_DecryptFinal_ex(c, out + total, &n) != 1) return false;  // the tag's verdict
  return static_cast<std::size_t>(total + n) == body.size();
}

}  // namespace heartwheel::tls::detail
