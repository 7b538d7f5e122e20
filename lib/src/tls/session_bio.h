// The one BIO a Session's SSL object reads from and writes to (private to
// the tls layer). It owns no buffer: during a Session call its data pointer
// is a BioIo on the caller's stack, naming the ciphertext to read and the
// string to append to; between calls it is null and the BIO neither reads
// nor writes. (h2o's socket.c uses the same design; two BIO_s_mem would
// copy every byte in and keep two growing buffers per connection.)
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <string>

namespace heartwheel::tls::detail {

struct BioIo {
  const char* in = nullptr;  // ciphertext not yet read by OpenSSL
  std::size_t in_left = 0;
  std::string* out = nullptr;  // ciphertext produced is appended here
};

// A new BIO of our method (its data pointer null). nullptr if out of memory.
BIO* new_session_bio() noexcept;

// Points the SSL's BIO at `io` for the life of this object.
class BioScope {
 public:
  BioScope(SSL* ssl, BioIo& io) noexcept : bio_(SSL_get_rbio(ssl)) { BIO_set_data(bio_, &io); }
  ~BioScope() { BIO_set_data(bio_, nullptr); }
  BioScope(const BioScope&) = delete;
  BioScope& operator=(const BioScope&) = delete;

 private:
  BIO* bio_;
};

}  // namespace heartwheel::tls::detail
