// The cryptography of TLS 1.3 records, for a session that has freed its SSL
// object (private to the tls layer; record_layer.h is the user): the three
// AEAD suites, HKDF-Expand-Label (RFC 8446 7.1) and the key and IV of a
// traffic secret (RFC 8446 7.3).
//
// Why per-thread contexts
//   An AES-GCM EVP_CIPHER_CTX with its provider state is ~1.1 KiB; two per
//   connection would be most of what freeing the SSL object saves. So each
//   thread keeps one context per suite and direction, and a record sets its
//   connection's key into it unless the thread's previous record used the
//   same key (a run of records of one connection). Measured here (OpenSSL
//   3.0, thread CPU time): a 70-byte record 290 ns with the key set, 475 ns
//   when the key changes. The key schedule is the cost of a connection that
//   was not the last one served.
//
// Threads: any thread; the contexts are the calling thread's own.
// Errors: false (out of memory, or OpenSSL refused), never an exception.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace heartwheel::tls::detail {

enum class Suite : std::uint8_t {
  aes_128_gcm_sha256,        // TLS_AES_128_GCM_SHA256 (0x1301)
  aes_256_gcm_sha384,        // TLS_AES_256_GCM_SHA384 (0x1302)
  chacha20_poly1305_sha256,  // TLS_CHACHA20_POLY1305_SHA256 (0x1303)
};

inline constexpr std::size_t kMaxSecretSize = 48;  // SHA-384's output
inline constexpr std::size_t kMaxKeySize = 32;
inline constexpr std::size_t kIvSize = 12;   // every suite's nonce (RFC 8446 5.3)
inline constexpr std::size_t kTagSize = 16;  // every suite's tag

// The suite of a TLS 1.3 cipher; nullopt for the CCM suites (not in the
// defaults) and for anything else.
std::optional<Suite> suite_of(const SSL_CIPHER* cipher) noexcept;
std::size_t secret_size(Suite suite) noexcept;  // the hash's output: 32 or 48
std::size_t key_size(Suite suite) noexcept;     // 16 or 32
const char* suite_name(Suite suite) noexcept;   // "TLS_AES_128_GCM_SHA256", ...

// HKDF-Expand-Label(secret, label, "", size) with the suite's hash: `label`
// without the "tls13 " prefix ("key", "iv", "traffic upd"). size <= the
// hash's output (every TLS 1.3 key, IV and secret is): one HMAC, on the
// thread's kept context.
bool expand_label(Suite suite, const std::uint8_t* secret, std::string_view label,
                  std::uint8_t* out, std::size_t size) noexcept;

// Encrypts `data` followed by the byte `content_type` (TLSInnerPlaintext
// without padding) under `key` and `nonce`, authenticating `aad`; writes
// data.size() + 1 bytes of ciphertext and then the 16-byte tag to `out`.
bool seal(Suite suite, const std::uint8_t* key, const std::uint8_t* nonce, std::string_view aad,
          std::string_view data, std::uint8_t content_type, std::uint8_t* out) noexcept;

// Decrypts `sealed` (ciphertext then the 16-byte tag; at least the tag)
// into `out` (sealed.size() - 16 bytes) and checks the tag. false: the tag
// is wrong (out then holds garbage) or OpenSSL failed.
bool open(Suite suite, const std::uint8_t* key, const std::uint8_t* nonce, std::string_view aad,
          std::string_view sealed, std::uint8_t* out) noexcept;

}  // namespace heartwheel::tls::detail
