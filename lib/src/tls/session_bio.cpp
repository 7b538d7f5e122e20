// The Session's BIO method: reads from and appends to the current call's
// buffers (session_bio.h).
#include "session_bio.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace heartwheel::tls::detail {

namespace {

int bio_write(BIO* bio, const char* data, std::size_t len, std::size_t* written) {
  BIO_clear_retry_flags(bio);
  auto* io = static_cast<BioIo*>(BIO_get_data(bio));
  if (!io || !io->out) return 0;  // outside a call: an error, not a retry
  try {
    io->out->append(data, len);
  } catch (const std::bad_alloc&) {
    return 0;
  }
  *written = len;
  return 1;
}

int bio_read(BIO* bio, char* data, std::size_t len, std::size_t* read) {
  BIO_clear_retry_flags(bio);
  auto* io = static_cast<BioIo*>(BIO_get_data(bio));
  if (!io || io->in_left == 0) {
    BIO_set_retry_read(bio);  // SSL_ERROR_WANT_READ: wait for the next feed()
    return 0;
  }
  const std::size_t n = std::min(len, io->in_left);
  std::memcpy(data, io->in, n);
  io->in += n;
  io->in_left -= n;
  *read = n;
  return 1;
}

long bio_ctrl(BIO*, int cmd, long, void*) {
  // OpenSSL flushes after each handshake flight; the bytes are already in
  // the caller's string. Everything else (pending counts, kTLS, ...) is "no".
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* session_bio_method() noexcept {
  // Made once per process and never freed (a static object OpenSSL keeps
  // pointers to from every BIO).
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "heartwheel tls");
    if (m) {
      BIO_meth_set_write_ex(m, bio_write);
      BIO_meth_set_read_ex(m, bio_read);
      BIO_meth_set_ctrl(m, bio_ctrl);
      BIO_meth_set_create(m, bio_create);
    }
    return m;
  }();
  return method;
}

}  // namespace

BIO* new_session_bio() noexcept {
  BIO_METHOD* method = session_bio_method();
  return method ? BIO_new(method) : nullptr;
}

}  // namespace heartwheel::tls::detail
