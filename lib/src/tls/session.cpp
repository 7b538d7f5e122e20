// tls::Session: the handshake, reading and writing through the session BIO
// (see session.h).
#include <heartwheel/common/error.h>
#include <heartwheel/tls/session.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

#include "context_internal.h"
#include "failure_detail.h"
#include "own_records.h"
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
  Session s(context, nullptr, State::first_record);
  s.first_record_ = nullptr;
  return s;
}

Session Session::client(const Context& context, std::string_view server_name,
                        std::string_view resume_key) {
  if (context.role() != Role::client) {
    throw std::invalid_argument("tls: Session::client needs a client Context");
  }
  Session s(context, with_bio(context.new_ssl()), State::handshaking);
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

// An established connection that ends without close_notify (the socket
// closed, the peer gone) keeps its session resumable: OpenSSL would
// otherwise mark it "bad" in SSL_free and a client could not resume with
// its ticket. TLS 1.1 and later allow that (RFC 5246 7.2.1); a fatal alert
// has already made the session unresumable by then.
void detail::free_ssl(SSL* ssl, bool established) noexcept {
  if (ssl && established) SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_SENT_SHUTDOWN);
  SSL_free(ssl);
}

void Session::release() noexcept {
  if (own_records_) {
    delete records_;
    own_records_ = false;
  } else if (state_ == State::first_record) {
    delete first_record_;
  } else {
    detail::free_ssl(ssl_, state_ == State::established);
  }
  ssl_ = nullptr;
}

Session::Session(Session&& other) noexcept { *this = std::move(other); }

Session& Session::operator=(Session&& other) noexcept {
  if (this != &other) {
    release();
    if (other.own_records_) {
      records_ = std::exchange(other.records_, nullptr);
    } else if (other.state_ == State::first_record) {
      first_record_ = std::exchange(other.first_record_, nullptr);
    } else {
      ssl_ = std::exchange(other.ssl_, nullptr);
    }
    own_records_ = other.own_records_;
    other.own_records_ = false;
    context_ = std::exchange(other.context_, nullptr);
    error_ = other.error_;
    state_ = other.state_;
    cause_ = other.cause_;
    peer_closed_ = other.peer_closed_;
    close_sent_ = other.close_sent_;
    other.state_ = State::handshaking;
  }
  return *this;
}

Session::~Session() { release(); }

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
  if (!ssl() || state_ != State::handshaking || SSL_is_server(ssl_)) return state_ != State::failed;
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

namespace {

// A TLS record header: type, version (2), length (2).
constexpr std::size_t kRecordHeader = 5;
constexpr unsigned char kHandshakeRecord = 22;
// RFC 8446 5.1: a plaintext record is at most 2^14 bytes; OpenSSL judges
// anything longer itself.
constexpr std::size_t kMaxFirstRecord = kRecordHeader + (1u << 14);

}  // namespace

std::string* Session::make_server_ssl() noexcept {
  std::string* gathered = std::exchange(first_record_, nullptr);
  state_ = State::handshaking;
  try {
    ssl_ = with_bio(context_->new_ssl());
    SSL_set_accept_state(ssl_);
  } catch (...) {  // bad_alloc
    ssl_ = nullptr;
    fail_with(FailureCause::other, 0);
  }
  return gathered;
}

std::optional<std::size_t> Session::gather_first_record(std::string_view ciphertext) {
  const std::string_view kept = first_record_ ? std::string_view(*first_record_) : std::string_view{};
  const std::size_t have = kept.size() + ciphertext.size();
  auto byte = [&](std::size_t i) {
    return static_cast<unsigned char>(i < kept.size() ? kept[i] : ciphertext[i - kept.size()]);
  };
  std::size_t need = 0;  // the first record's length; 0: not a handshake record
  const bool plausible = (have < 1 || byte(0) == kHandshakeRecord) && (have < 2 || byte(1) == 3);
  if (plausible && have >= kRecordHeader) {
    need = kRecordHeader + (std::size_t{byte(3)} << 8 | byte(4));
    if (need > kMaxFirstRecord) need = 0;
  }
  if (plausible && (have < kRecordHeader || (need != 0 && have < need))) {
    try {  // keep it all: the record is not complete yet
      if (!first_record_) first_record_ = new std::string;
      first_record_->append(ciphertext);
    } catch (...) {
      delete std::exchange(first_record_, nullptr);
      state_ = State::handshaking;
      ssl_ = nullptr;
      fail_with(FailureCause::other, 0);
    }
    return std::nullopt;
  }
  // Complete (or not TLS at all: OpenSSL says why). Only the part of the
  // record that was held back before is joined with its rest; the bytes of
  // this call are read in place.
  if (first_record_ && need != 0) {
    const std::size_t take = need - kept.size();
    first_record_->append(ciphertext.substr(0, take));
    return take;
  }
  return 0;
}

FeedResult Session::feed(std::string_view ciphertext, std::span<char> plaintext_out,
                         std::string& ciphertext_out) {
  if (!context_ || state_ == State::failed || plaintext_out.empty()) return {};
  if (own_records_) return feed_records(ciphertext, plaintext_out, ciphertext_out);
  if (state_ != State::first_record) return feed_ssl(ciphertext, plaintext_out, ciphertext_out);
  const std::optional<std::size_t> joined = gather_first_record(ciphertext);
  if (!joined) {  // all of it kept, the record still incomplete (or out of memory)
    return FeedResult{.consumed = ciphertext.size(), .failed = state_ == State::failed};
  }
  const std::size_t kept = *joined;
  // The first record is complete, or the bytes are no TLS: make the SSL
  // object and give it what was held back, then the rest of this call's.
  std::unique_ptr<std::string> gathered(make_server_ssl());
  FeedResult r;
  if (state_ == State::failed) {
    r.consumed = ciphertext.size();
    r.failed = true;
    return r;
  }
  if (gathered) {
    // One record, all of it taken: on a server it cannot complete the
    // handshake, so no plaintext comes of it.
    r = feed_ssl(*gathered, plaintext_out, ciphertext_out);
    r.consumed = kept;
    if (r.failed) return r;
  }
  const FeedResult rest = feed_ssl(ciphertext.substr(kept), plaintext_out.subspan(r.plaintext),
                                   ciphertext_out);
  r.consumed += rest.consumed;
  r.plaintext += rest.plaintext;
  r.plaintext_out_full = r.plaintext == plaintext_out.size();
  r.handshake_done |= rest.handshake_done;
  r.peer_closed |= rest.peer_closed;
  r.failed |= rest.failed;
  return r;
}

FeedResult Session::feed_ssl(std::string_view ciphertext, std::span<char> plaintext_out,
                             std::string& ciphertext_out) {
  FeedResult r;
  detail::BioIo io{ciphertext.data(), ciphertext.size(), &ciphertext_out};
  if (state_ == State::handshaking) {
    const std::size_t out_before = ciphertext_out.size();
    {
      detail::BioScope scope(ssl_, io);
      ERR_clear_error();
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
    }  // the BIO is let go before the SSL object may be freed
    // A server's handshake ends with its last flight (the tickets) written
    // and not one byte read past the client's Finished: the records from
    // here on are the record layer's.
    if (r.handshake_done && drop_ssl(std::string_view(ciphertext_out).substr(out_before))) {
      const std::size_t used = ciphertext.size() - io.in_left;
      FeedResult rest = feed_records(ciphertext.substr(used), plaintext_out, ciphertext_out);
      rest.consumed += used;
      rest.handshake_done = true;
      return rest;
    }
  }
  detail::BioScope scope(ssl_, io);
  ERR_clear_error();
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
  if (!live() || state_ == State::failed || close_sent_) return make_error_code(errc::closed);
  if (state_ == State::handshaking) return make_error_code(errc::invalid_argument);
  if (plaintext.empty()) return {};
  if (own_records_) {
    const std::uint32_t e = records_->records.write(plaintext, ciphertext_out);
    if (e == 0) return {};
    fail_with(FailureCause::other, e);
    return make_error_code(errc::closed);
  }
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
  if (!live() || state_ != State::established || close_sent_) return;
  close_sent_ = true;
  if (own_records_) {
    records_->records.close_notify(ciphertext_out);  // a failure here changes nothing now
    return;
  }
  detail::BioIo io{nullptr, 0, &ciphertext_out};
  detail::BioScope scope(ssl_, io);
  ERR_clear_error();
  SSL_shutdown(ssl_);  // 0: sent, the peer's not seen; 1: both. Not waited for.
  ERR_clear_error();
}

std::string Session::message() const {
  if (state_ != State::failed) return {};
  return detail::describe(error_, ssl());
}

bool Session::resumed() const noexcept {
  if (own_records_) return records_->resumed;
  return ssl() && SSL_session_reused(ssl_) == 1;
}

std::string_view Session::alpn() const noexcept {
  if (own_records_) {
    return records_->alpn == detail::OwnRecords::kNoAlpn
               ? std::string_view{}
               : std::string_view(context_->options().alpn[records_->alpn]);
  }
  if (!ssl()) return {};
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_, &data, &len);
  return data ? std::string_view(reinterpret_cast<const char*>(data), len) : std::string_view{};
}

std::string_view Session::server_name() const noexcept {
  if (own_records_) return records_->server_name;
  const char* name = ssl() ? SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name) : nullptr;
  return name ? std::string_view(name) : std::string_view{};
}

std::string_view Session::version() const noexcept {
  if (own_records_) return "TLSv1.3";  // only a TLS 1.3 session frees its SSL object
  return ssl() ? std::string_view(SSL_get_version(ssl_)) : std::string_view{};
}

std::string_view Session::cipher() const noexcept {
  if (own_records_) return detail::suite_name(records_->records.suite());
  const SSL_CIPHER* c = ssl() ? SSL_get_current_cipher(ssl_) : nullptr;
  return c ? std::string_view(SSL_CIPHER_get_name(c)) : std::string_view{};
}

}  // namespace heartwheel::tls
