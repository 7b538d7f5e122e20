// What a server Session keeps once it has freed its SSL object (private to
// the tls layer; session.h, "After a server's handshake"): the record layer
// and what the handshake agreed on, for the accessors.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <string>

#include "record_layer.h"

namespace heartwheel::tls::detail {

struct OwnRecords {
  static constexpr std::uint8_t kNoAlpn = 0xff;
  RecordLayer records;
  std::string server_name;      // the SNI name; empty: none
  std::uint8_t alpn = kNoAlpn;  // the selected protocol's index in the Context's options().alpn
  bool resumed = false;
};
// One 288-byte malloc chunk (glibc: 265-280 bytes round up to it), against
// OpenSSL's ~13.4 KB; docs/memory.md has the table.
static_assert(sizeof(OwnRecords) <= 280, "OwnRecords grew past its 288-byte malloc chunk");

// Frees an SSL object; `established`: keep its session resumable (session.cpp).
void free_ssl(SSL* ssl, bool established) noexcept;

}  // namespace heartwheel::tls::detail
