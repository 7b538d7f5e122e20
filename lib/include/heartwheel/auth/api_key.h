// heartwheel/auth/api_key.h - the server API key: what a backend presents to
// publish through the HTTP API (heartwheel-push: POST /publish and
// DELETE /publish/{id}, --api-key-file FILE), as
//   Authorization: apikey <KEY>
//
// The key is loaded once from a file: trailing CR/LF are not part of it (a
// file written by echo), an empty key is refused, and so is one holding
// whitespace or control characters (it could not travel in the header
// intact). matches() compares in constant time: both sides are hashed with
// SHA-256 (OpenSSL) and the digests compared with CRYPTO_memcmp, so neither
// the position of the first wrong byte nor the key's length shows in the
// time a refusal takes.
//
// Cost: one SHA-256 of the presented key per request. Threads: immutable
// after loading; const calls from any thread.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::auth {

class ApiKey {
 public:
  // Throws std::invalid_argument for an empty key or one with whitespace or
  // control characters.
  static ApiKey from_string(std::string_view key);
  // Throws std::invalid_argument naming the file (missing, unreadable, a
  // directory, empty, or a refused key as above).
  static ApiKey from_file(const std::string& path);

  // True if `presented` is the key. Constant time in the key's contents.
  bool matches(std::string_view presented) const noexcept;

 private:
  ApiKey() = default;
  std::array<unsigned char, 32> digest_{};  // SHA-256 of the key; the key itself is not kept
};

// The key of an Authorization header value "apikey <KEY>" (scheme
// case-insensitive, spaces or tabs between, surrounding whitespace ignored),
// or nullopt for any other value (another scheme, no key, a key with
// whitespace inside). The view points into `header_value`.
std::optional<std::string_view> parse_apikey_authorization(std::string_view header_value) noexcept;

}  // namespace heartwheel::auth
