// Sec-WebSocket-Key / Sec-WebSocket-Accept: SHA-1 and base64 from OpenSSL's
// libcrypto (the only file of the library that uses it). See
// heartwheel/ws/handshake.h.
#include <heartwheel/ws/handshake.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace heartwheel::ws {

namespace {

constexpr std::size_t kKeyBytes = 16;  // RFC 6455 4.1: a 16-byte nonce
constexpr std::size_t kKeyChars = 24;  // its base64: 22 characters + "=="
constexpr std::size_t kSha1Bytes = 20;
constexpr std::size_t kAcceptChars = 28;  // base64 of 20 bytes

std::string base64(const unsigned char* bytes, std::size_t size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');  // + the NUL EVP_EncodeBlock writes
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes, static_cast<int>(size));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace

std::string accept_key(std::string_view client_key) {
  std::string input;
  input.reserve(client_key.size() + kAcceptGuid.size());
  input.append(client_key).append(kAcceptGuid);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &digest_size, EVP_sha1(), nullptr) != 1 ||
      digest_size != kSha1Bytes)
    throw std::runtime_error("ws: OpenSSL could not compute SHA-1 for Sec-WebSocket-Accept");
  std::string out = base64(digest, kSha1Bytes);
  if (out.size() != kAcceptChars)
    throw std::runtime_error("ws: OpenSSL base64 gave an unexpected Sec-WebSocket-Accept size");
  return out;
}

bool is_valid_client_key(std::string_view key) noexcept {
  if (key.size() != kKeyChars || key.substr(kKeyChars - 2) != "==") return false;
  // '=' only as the final padding: EVP_DecodeBlock would accept it elsewhere.
  if (key.substr(0, kKeyChars - 2).find('=') != std::string_view::npos) return false;
  unsigned char decoded[kKeyChars];  // EVP_DecodeBlock writes 3 bytes per 4 characters
  const int n = EVP_DecodeBlock(decoded, reinterpret_cast<const unsigned char*>(key.data()),
                                static_cast<int>(key.size()));
  // It counts the two padding characters as zero bytes: 18 = 16 + 2.
  return n == static_cast<int>(kKeyBytes + 2);
}

std::string make_client_key() {
  unsigned char nonce[kKeyBytes];
  if (RAND_bytes(nonce, static_cast<int>(kKeyBytes)) != 1)
    throw std::runtime_error("ws: OpenSSL RAND_bytes failed to make a Sec-WebSocket-Key");
  return base64(nonce, kKeyBytes);
}

}  // namespace heartwheel::ws
