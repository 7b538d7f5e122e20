// The server API key (api_key.h).
#include <heartwheel/auth/api_key.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <stdexcept>

#include "key_file.h"

namespace heartwheel::auth {

namespace {

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

// SHA-256 of `text` into `out`; false if OpenSSL fails (it does not for SHA-256).
bool sha256(std::string_view text, std::array<unsigned char, 32>& out) noexcept {
  unsigned int size = 0;
  return EVP_Digest(text.data(), text.size(), out.data(), &size, EVP_sha256(), nullptr) == 1 &&
         size == out.size();
}

void check_key(std::string_view key, const std::string& source) {
  if (key.empty()) throw std::invalid_argument(source + ": empty");
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f)
      throw std::invalid_argument(source +
                                  ": the key holds whitespace or control characters; an API key "
                                  "travels in an HTTP header and must be one printable word "
                                  "(e.g. `openssl rand -hex 32`)");
  }
}

}  // namespace

ApiKey ApiKey::from_string(std::string_view key) {
  check_key(key, "API key");
  ApiKey k;
  if (!sha256(key, k.digest_)) throw std::runtime_error("OpenSSL: SHA-256 failed");
  return k;
}

ApiKey ApiKey::from_file(const std::string& path) {
  std::string text = detail::read_small_file(path, "API key file", 64 * 1024);
  const std::string_view key = detail::trim_trailing_newlines(text);
  ApiKey k;
  try {
    check_key(key, "API key file " + path);
  } catch (...) {
    OPENSSL_cleanse(text.data(), text.size());
    throw;
  }
  const bool ok = sha256(key, k.digest_);
  OPENSSL_cleanse(text.data(), text.size());
  if (!ok) throw std::runtime_error("OpenSSL: SHA-256 failed");
  return k;
}

bool ApiKey::matches(std::string_view presented) const noexcept {
  std::array<unsigned char, 32> digest{};
  if (!sha256(presented, digest)) return false;
  return CRYPTO_memcmp(digest.data(), digest_.data(), digest.size()) == 0;
}

std::optional<std::string_view> parse_apikey_authorization(std::string_view value) noexcept {
  while (!value.empty() && is_space(value.front())) value.remove_prefix(1);
  while (!value.empty() && is_space(value.back())) value.remove_suffix(1);
  constexpr std::string_view scheme = "apikey";
  if (value.size() <= scheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    const char c = value[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != scheme[i])
      return std::nullopt;
  }
  value.remove_prefix(scheme.size());
  if (!is_space(value.front())) return std::nullopt;  // "apikeyX..." is another scheme
  while (!value.empty() && is_space(value.front())) value.remove_prefix(1);
  if (value.empty()) return std::nullopt;
  for (const char c : value)
    if (is_space(c)) return std::nullopt;
  return value;
}

}  // namespace heartwheel::auth
