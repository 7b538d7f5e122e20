// Script: a Lua script's SHA-1 (libcrypto, as the WebSocket handshake uses)
// and its EVALSHA calls (command.h).
#include <heartwheel/redis/command.h>
#include <openssl/evp.h>

#include <stdexcept>
#include <vector>

namespace heartwheel::redis {

namespace {
constexpr std::size_t kSha1Bytes = 20;

std::string sha1_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha1(), nullptr) != 1 ||
      size != kSha1Bytes)
    throw std::runtime_error("redis: OpenSSL could not compute a script's SHA-1");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(2 * kSha1Bytes, '0');
  for (std::size_t i = 0; i < kSha1Bytes; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}
}  // namespace

Script::Script(std::string source)
    : source_(std::make_shared<const std::string>(std::move(source))), sha1_(sha1_hex(*source_)) {}

Command Script::call(std::initializer_list<std::string_view> keys,
                     std::initializer_list<std::string_view> args) const {
  return call(std::span<const std::string_view>(keys.begin(), keys.size()),
              std::span<const std::string_view>(args.begin(), args.size()));
}

Command Script::call(std::span<const std::string_view> keys,
                     std::span<const std::string_view> args) const {
  const std::string numkeys = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.insert(argv.end(), {"EVALSHA", sha1_, numkeys});
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  Command c;
  c.encode(argv);
  c.script_ = source_;
  return c;
}

}  // namespace heartwheel::redis
