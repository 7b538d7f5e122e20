// tls::Session: the handshake, reading and writing through the session BIO
// (see session.h).
#include <heartwheel/common/error.h>
#include <heartwheel/tls/session.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <new>
#include <stdexcept>
#include <utility>

#include "context_internal.h"
#include "failure_detail.h"
#include "session_bio.h"

namespace heartwheel::tls {

namespace {

// Gives a fresh SSL (from Context::new_ssl) our BIO as both its read and
// write side. Frees it and throws std::bad_alloc when anything is missing.
SSL* with_bio(SSL* fresh) {
  if (!fresh) throw std::bad_alloc();
  BIO* bio = detail::new_session_bio();
  if (!bio) {
    SSL_free(fresh);
    throw std::bad_alloc();
  }
  SSL_set_bio(fresh, bio, bio);  // one BIO for both sides: the SSL takes our reference
  return fresh;
}

bool is_ip_address(const std::string& name) noexcept {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

// OpenSSL's SSL_set_tlsext_host_name is a macro with a C cast.
bool set_sni(SSL* ssl, const char* name) noexcept {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
  return SSL_set_tlsext_host_name(ssl, name) == 1;
#pragma GCC diagnostic pop
}

}  // namespace

Session Session::server(const Context& context) {
  if (context.role() != Role::server) {
    throw std::invalid_argument("tls: Session::server needs a server Context");
  }
  Session s(with_bio(context.new_ssl()));
  SSL_set_accept_state(s.ssl_);
  return s;
}

Session Session::client(const Context& context, std::string_view server_name,
                        std::string_view resume_key) {
  if (context.role() != Role::client) {
    throw std::invalid_argument("tls: Session::client needs a client Context");
  }
  Session s(with_bio(context.new_ssl()));
  SSL* ssl = s.ssl_;
  SSL_set_connect_state(ssl);
  const std::string name(server_name);
  bool ok = true;
  if (!name.empty()) {
    const bool ip = is_ip_address(name);
    // RFC 6066 3: SNI carries host names, never address literals.
    if (!ip) ok = set_sni(ssl, name.c_str());
    if (ok && !context.options().insecure) {
      ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1
              : SSL_set1_host(ssl, name.c_str()) == 1;
    }
  }
  if (ok && context.client_cache()) {
    auto* key = new (std::nothrow) std::string(resume_key.empty() ? server_name : resume_key);
    ok = key && SSL_set_ex_data(ssl, detail::resume_key_index(), key) == 1;
    if (ok) {
      context.client_cache()->offer(*key, ssl);
    } else {
      delete key;
    }
  }
  if (!ok) {
    ERR_clear_error();
    throw std::bad_alloc();
  }
  return s;
}

Session::Session(Session&& other) noexcept
    : ssl_(std::exchange(other.ssl_, nullptr)),
      error_(other.error_),
      state_(other.state_),
      cause_(other.cause_),
      peer_closed_(other.peer_closed_),
      close_sent_(other.close_sent_) {}

namespace {

// Frees an SSL. An established connection that ends without close_notify
// (the socket closed, the peer gone) keeps its session resumable: OpenSSL
// would otherwise mark it "bad" in SSL_free and a client could not resume
// with its ticket. TLS 1.1 and later allow that (RFC 5246 7.2.1); a fatal
// alert has already made the session unresumable by then.
void free_ssl(SSL* ssl, bool established) noexcept {
  if (ssl && established) SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_SENT_SHUTDOWN);
  SSL_free(ssl);
}

}  // namespace

Session& Session::operator=(Session&& other) noexcept {
  if (this != &other) {
    free_ssl(ssl_, state_ == State::established);
    ssl_ = std::exchange(other.ssl_, nullptr);
    error_ = other.error_;
    state_ = other.state_;
    cause_ = other.cause_;
    peer_closed_ = other.peer_closed_;
    close_sent_ = other.close_sent_;
  }
  return *this;
}

Session::~Session() { free_ssl(ssl_, state_ == State::established); }

void Session::fail_with(FailureCause cause, std::uint32_t code) noexcept {
  state_ = State::failed;
  cause_ = cause;
  error_ = code;
}

void Session::fail(int ssl_error) noexcept {
  // The earliest error in the queue is the cause; the later ones are
  // OpenSSL's own follow-ups. Left in the queue they would confuse the
  // next SSL_get_error of another session on this thread.
  const auto code = static_cast<std::uint32_t>(ERR_peek_error());
  ERR_clear_error();
  if (ssl_error == SSL_ERROR_SSL && code != 0) {
    fail_with(detail::classify(code), code);
  } else {
    // SSL_ERROR_SYSCALL: our BIO refused a write (out of memory).
    fail_with(FailureCause::other, code);
  }
}

bool Session::start(std::string& ciphertext_out) {
  if (!ssl_ || state_ != State::handshaking || SSL_is_server(ssl_)) return state_ != State::failed;
  detail::BioIo io{nullptr, 0, &ciphertext_out};
  detail::BioScope scope(ssl_, io);
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {  // cannot finish without the server's answer
    state_ = State::established;
    return true;
  }
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ) return true;
  fail(err);
  return false;
}

FeedResult Session::feed(std::string_view ciphertext, std::span<char> plaintext_out,
                         std::string& ciphertext_out) {
  FeedResult r;
  if (!ssl_ || state_ == State::failed || plaintext_out.empty()) return r;
  detail::BioIo io{ciphertext.data(), ciphertext.size(), &ciphertext_out};
  detail::BioScope scope(ssl_, io);
  ERR_clear_error();
  if (state_ == State::handshaking) {
    const int rc = SSL_do_handshake(ssl_);
    if (rc == 1) {
      state_ = State::established;
      r.handshake_done = true;
    } else {
      const int err = SSL_get_error(ssl_, rc);
      if (err != SSL_ERROR_WANT_READ) {
        fail(err);
        r.failed = true;
      }
    }
  }
  // Established (now or before): decrypt until the input is used up or the
  // output is full. SSL_read returns at most one record's plaintext a call.
  while (state_ == State::established && !peer_closed_ && r.plaintext < plaintext_out.size()) {
    std::size_t got = 0;
    const int rc = SSL_read_ex(ssl_, plaintext_out.data() + r.plaintext,
                               plaintext_out.size() - r.plaintext, &got);
    if (rc == 1) {
      r.plaintext += got;
      continue;
    }
    const int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) break;
    if (err == SSL_ERROR_ZERO_RETURN) {
      peer_closed_ = true;
      r.peer_closed = true;
      break;
    }
    fail(err);
    r.failed = true;
  }
  r.plaintext_out_full = r.plaintext == plaintext_out.size();
  r.consumed = ciphertext.size() - io.in_left;
  return r;
}

std::error_code Session::write(std::string_view plaintext, std::string& ciphertext_out) {
  if (!ssl_ || state_ == State::failed || close_sent_) return make_error_code(errc::closed);
  if (state_ == State::handshaking) return make_error_code(errc::invalid_argument);
  if (plaintext.empty()) return {};
  detail::BioIo io{nullptr, 0, &ciphertext_out};
  detail::BioScope scope(ssl_, io);
  ERR_clear_error();
  std::size_t written = 0;
  // Without SSL_MODE_ENABLE_PARTIAL_WRITE, success means every byte; our BIO
  // never asks to retry a write.
  const int rc = SSL_write_ex(ssl_, plaintext.data(), plaintext.size(), &written);
  if (rc == 1) return {};
  fail(SSL_get_error(ssl_, rc));
  return make_error_code(errc::closed);
}

void Session::close(std::string& ciphertext_out) {
  if (!ssl_ || state_ != State::established || close_sent_) return;
  close_sent_ = true;
  detail::BioIo io{nullptr, 0, &ciphertext_out};
  detail::BioScope scope(ssl_, io);
  ERR_clear_error();
  SSL_shutdown(ssl_);  // 0: sent, the peer's not seen; 1: both. Not waited for.
  ERR_clear_error();
}

std::string Session::message() const {
  if (state_ != State::failed) return {};
  return detail::describe(error_, ssl_);
}

bool Session::resumed() const noexcept { return ssl_ && SSL_session_reused(ssl_) == 1; }

std::string_view Session::alpn() const noexcept {
  if (!ssl_) return {};
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_, &data, &len);
  return data ? std::string_view(reinterpret_cast<const char*>(data), len) : std::string_view{};
}

std::string_view Session::server_name() const noexcept {
  const char* name = ssl_ ? SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name) : nullptr;
  return name ? std::string_view(name) : std::string_view{};
}

std::string_view Session::version() const noexcept {
  return ssl_ ? std::string_view(SSL_get_version(ssl_)) : std::string_view{};
}

std::string_view Session::cipher() const noexcept {
  const SSL_CIPHER* c = ssl_ ? SSL_get_current_cipher(ssl_) : nullptr;
  return c ? std::string_view(SSL_CIPHER_get_name(c)) : std::string_view{};
}

}  // namespace heartwheel::tls
