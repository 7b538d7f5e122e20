// heartwheel/auth/token_key.h - the key tokens are verified with, loaded once.
//
// What it is
//   A TokenKey is one of three kinds, and its kind pins the JWS algorithms a
//   token may name (RFC 7518 section 3.1):
//     hmac_secret    a shared secret ............ HS256, HS384, HS512
//     rsa_public     an RSA public key (PEM) .... RS256, RS384, RS512
//     ecdsa_public   an EC public key (PEM) ..... ES256 (P-256), ES384 (P-384),
//                                                 ES512 (P-521): the curve picks one
//   A token whose alg is not in its key's row ("none", "HS256" against an RSA
//   key: the algorithm-confusion attack) is refused before any signature is
//   computed (TokenVerifier). The programs' flags map onto the loaders:
//   --token-hmac-secret-file, --token-rsa-public-key, --token-ecdsa-public-key.
//
// Loading checks what a person can get wrong, and says what to do
//   (std::invalid_argument, the message names the file): a missing, unreadable
//   or empty file, a directory; a secret shorter than 32 bytes (RFC 7518 3.2:
//   at least the hash's size), or one that is a PEM key; a PEM file holding a
//   private key or a certificate instead of a public key, a key of the other
//   kind (an EC key given as RSA), an RSA key under 2048 bits, an unsupported
//   curve. Key files may end with a newline; for a secret, trailing CR/LF are
//   not part of it (files written by `echo`).
//
// Ownership and cost: the key is parsed once; a TokenKey shares it (a
// shared_ptr to immutable OpenSSL objects), so copies are cheap and every
// worker thread's TokenVerifier can hold one.
// Threads: immutable after loading; copies and const calls from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace heartwheel::auth {

namespace detail {
struct KeyData;  // the parsed key (OpenSSL objects); lib/src/auth/key_data.h
}

enum class KeyKind { hmac_secret, rsa_public, ecdsa_public };

class TokenKey {
 public:
  // A shared secret for HS256/384/512. Throws std::invalid_argument when it is
  // shorter than 32 bytes or looks like a PEM key.
  static TokenKey hmac_secret(std::string_view secret);
  // The secret from a file (trailing CR/LF removed). Throws
  // std::invalid_argument (the file cannot be read, is empty, or the secret is
  // refused as above).
  static TokenKey hmac_secret_file(const std::string& path);

  // An RSA public key in PEM ("BEGIN PUBLIC KEY" or "BEGIN RSA PUBLIC KEY"),
  // at least 2048 bits, for RS256/384/512. Throws std::invalid_argument.
  static TokenKey rsa_public_key_pem(std::string_view pem);
  static TokenKey rsa_public_key_file(const std::string& path);

  // An EC public key in PEM ("BEGIN PUBLIC KEY") on P-256, P-384 or P-521:
  // ES256, ES384 or ES512 respectively. Throws std::invalid_argument.
  static TokenKey ecdsa_public_key_pem(std::string_view pem);
  static TokenKey ecdsa_public_key_file(const std::string& path);

  KeyKind kind() const noexcept;
  // True if a token naming `alg` may be verified with this key (the table
  // above); false for "none" and anything else.
  bool accepts(std::string_view alg) const noexcept;
  // The algorithms accepted, for messages: "HS256, HS384, HS512", "ES256".
  std::string_view algorithms() const noexcept;
  // A description for logs: "HMAC secret (40 bytes)", "RSA public key (2048
  // bits)", "EC public key (P-256)". Never the secret itself.
  std::string describe() const;

  const detail::KeyData& data() const noexcept { return *data_; }

 private:
  explicit TokenKey(std::shared_ptr<const detail::KeyData> data) noexcept;
  std::shared_ptr<const detail::KeyData> data_;
};

}  // namespace heartwheel::auth
