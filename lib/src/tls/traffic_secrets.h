// The first application traffic secrets of a TLS 1.3 handshake, caught from
// OpenSSL's key log callback (private to the tls layer).
//
// A server Session that frees its SSL object after the handshake
// (record_layer.h) protects records itself and so needs the secrets, and
// needs them whole (not only the key and IV) to follow a KeyUpdate. OpenSSL
// 3.0 has no getter for them; the key log callback, SSLKEYLOGFILE's
// source, is its one public way out. The secrets live in a block of the
// SSL's ex_data from the moment OpenSSL derives them until the SSL is
// freed, which wipes them.
//
// Threads: the callback runs inside the SSL's handshake calls, on the
// thread of its Session.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>

#include "record_crypto.h"

namespace heartwheel::tls::detail {

struct TrafficSecrets {
  std::uint8_t client[kMaxSecretSize] = {};  // CLIENT_TRAFFIC_SECRET_0
  std::uint8_t server[kMaxSecretSize] = {};  // SERVER_TRAFFIC_SECRET_0
  std::uint8_t client_size = 0;              // 0: not seen (yet)
  std::uint8_t server_size = 0;
};

// Sets the key log callback of `ctx` (a server's): each of its SSLs keeps
// its two TLS 1.3 application traffic secrets. TLS 1.2 handshakes keep
// nothing.
void catch_traffic_secrets(SSL_CTX* ctx) noexcept;

// The secrets `ssl` caught, or nullptr (none yet, TLS 1.2, or out of
// memory). Owned by the SSL: valid until it is freed.
const TrafficSecrets* traffic_secrets(const SSL* ssl) noexcept;

}  // namespace heartwheel::tls::detail
