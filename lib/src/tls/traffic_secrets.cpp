// Catching TLS 1.3 traffic secrets from the key log callback (see
// traffic_secrets.h).
#include "traffic_secrets.h"

#include <openssl/crypto.h>

#include <cstring>
#include <new>
#include <string_view>

namespace heartwheel::tls::detail {

namespace {

void free_secrets(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  auto* s = static_cast<TrafficSecrets*>(ptr);
  if (!s) return;
  OPENSSL_cleanse(s, sizeof *s);
  delete s;
}

int secrets_index() noexcept {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_secrets);
  return index;
}

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `hex` into `out`; its size in bytes, or 0 if it is not hex of at most
// kMaxSecretSize bytes.
std::uint8_t parse_secret(std::string_view hex, std::uint8_t* out) noexcept {
  if (hex.empty() || hex.size() % 2 != 0 || hex.size() / 2 > kMaxSecretSize) return 0;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return 0;
    out[i / 2] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return static_cast<std::uint8_t>(hex.size() / 2);
}

// "LABEL <client random in hex> <secret in hex>", one line per secret
// (NSS's key log format).
void on_key_log_line(const SSL* ssl, const char* line) {
  const std::string_view text(line);
  const std::size_t label_end = text.find(' ');
  if (label_end == std::string_view::npos) return;
  const std::string_view label = text.substr(0, label_end);
  const bool client = label == "CLIENT_TRAFFIC_SECRET_0";
  if (!client && label != "SERVER_TRAFFIC_SECRET_0") return;
  const std::size_t secret_at = text.find(' ', label_end + 1);
  if (secret_at == std::string_view::npos) return;
  auto* s = static_cast<TrafficSecrets*>(SSL_get_ex_data(ssl, secrets_index()));
  if (!s) {
    s = new (std::nothrow) TrafficSecrets;
    // SSL_set_ex_data wants the SSL itself; the callback is handed it
    // const, and this ex_data slot is ours alone.
    if (!s || SSL_set_ex_data(const_cast<SSL*>(ssl), secrets_index(), s) != 1) {
      delete s;
      return;  // no secrets: the session keeps its SSL object
    }
  }
  const std::string_view hex = text.substr(secret_at + 1);
  if (client) {
    s->client_size = parse_secret(hex, s->client);
  } else {
    s->server_size = parse_secret(hex, s->server);
  }
}

}  // namespace

void catch_traffic_secrets(SSL_CTX* ctx) noexcept {
  secrets_index();  // made before the first handshake needs it
  SSL_CTX_set_keylog_callback(ctx, on_key_log_line);
}

const TrafficSecrets* traffic_secrets(const SSL* ssl) noexcept {
  return static_cast<const TrafficSecrets*>(SSL_get_ex_data(ssl, secrets_index()));
}

}  // namespace heartwheel::tls::detail
