// TLS 1.3 records without the SSL object (see record_layer.h).
#include "record_layer.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

namespace heartwheel::tls::detail {

namespace {

constexpr std::size_t kHeader = 5;
constexpr std::size_t kMaxPlaintext = 1u << 14;          // RFC 8446 5.1
constexpr std::size_t kMaxSealed = kMaxPlaintext + 256;  // RFC 8446 5.2
constexpr std::uint8_t kChangeCipherSpec = 20, kAlert = 21, kHandshake = 22, kApplicationData = 23;
constexpr std::uint8_t kKeyUpdate = 24;  // HandshakeType key_update
// AlertDescription values (RFC 8446 6).
constexpr int kCloseNotify = 0, kUnexpectedMessage = 10, kBadRecordMac = 20, kRecordOverflow = 22,
              kIllegalParameter = 47, kDecodeError = 50, kInternalError = 80, kUserCanceled = 90;
constexpr int kNoAlert = -1;
// KeyUpdates accepted in a row with no application data between them
// (OpenSSL's MAX_KEY_UPDATE_MESSAGES).
constexpr std::uint8_t kMaxKeyUpdates = 32;

std::uint32_t ssl_error(int reason) noexcept {
  return static_cast<std::uint32_t>((static_cast<unsigned long>(ERR_LIB_SSL) & ERR_LIB_MASK)
                                        << ERR_LIB_OFFSET |
                                    (static_cast<unsigned long>(reason) & ERR_REASON_MASK));
}

std::size_t body_length(std::string_view header) noexcept {
  return std::size_t{static_cast<std::uint8_t>(header[3])} << 8 |
         static_cast<std::uint8_t>(header[4]);
}

// Decrypted records that do not fit the caller's buffer land here first.
std::uint8_t* scratch() noexcept {
  thread_local std::array<std::uint8_t, kMaxSealed> buffer;
  return buffer.data();
}

}  // namespace

std::optional<std::uint64_t> count_records(std::string_view bytes) noexcept {
  std::uint64_t n = 0;
  while (!bytes.empty()) {
    if (bytes.size() < kHeader) return std::nullopt;
    const std::size_t size = kHeader + body_length(bytes);
    if (bytes.size() < size) return std::nullopt;
    bytes.remove_prefix(size);
    ++n;
  }
  return n;
}

bool TrafficKeys::derive(Suite suite) noexcept {
  seq = 0;
  return expand_label(suite, secret, "key", key, key_size(suite)) &&
         expand_label(suite, secret, "iv", iv, kIvSize);
}

bool TrafficKeys::update(Suite suite) noexcept {
  std::uint8_t next[kMaxSecretSize];
  const std::size_t n = secret_size(suite);
  const bool ok = expand_label(suite, secret, "traffic upd", next, n);
  if (ok) std::memcpy(secret, next, n);
  OPENSSL_cleanse(next, sizeof next);
  return ok && derive(suite);
}

void TrafficKeys::nonce(std::uint8_t out[kIvSize]) const noexcept {
  std::memcpy(out, iv, kIvSize);
  for (std::size_t i = 0; i < 8; ++i) {
    out[kIvSize - 1 - i] ^= static_cast<std::uint8_t>(seq >> (8 * i));
  }
}

RecordLayer::~RecordLayer() {
  OPENSSL_cleanse(&read_, sizeof read_);
  OPENSSL_cleanse(&write_, sizeof write_);
  delete partial_;
  delete pending_;
}

bool RecordLayer::start(Suite suite, const TrafficSecrets& secrets,
                        std::uint64_t written) noexcept {
  const std::size_t n = secret_size(suite);
  if (secrets.client_size != n || secrets.server_size != n) return false;
  suite_ = suite;
  std::memcpy(read_.secret, secrets.client, n);
  std::memcpy(write_.secret, secrets.server, n);
  if (!read_.derive(suite) || !write_.derive(suite)) return false;
  write_.seq = written;
  return true;
}

void RecordLayer::fail(Read& r, int reason, int alert, std::string& out) {
  failed_ = true;
  r.error = ssl_error(reason);
  if (alert == kNoAlert || closed_) return;
  const char body[2] = {2, static_cast<char>(alert)};   // fatal
  seal_record(kAlert, std::string_view(body, 2), out);  // best effort: the layer is done
}

bool RecordLayer::check_header(std::string_view header, Read& r, std::string& out) {
  const auto type = static_cast<std::uint8_t>(header[0]);
  if (type != kApplicationData) {
    // After the handshake every record is protected; a change_cipher_spec
    // is allowed only before the peer's Finished (RFC 8446 5).
    fail(r, type == kChangeCipherSpec ? SSL_R_UNEXPECTED_RECORD : SSL_R_BAD_RECORD_TYPE,
         kUnexpectedMessage, out);
    return false;
  }
  if (header[1] != 3 || header[2] != 3) {
    fail(r, SSL_R_WRONG_VERSION_NUMBER, kDecodeError, out);
    return false;
  }
  const std::size_t length = body_length(header);
  if (length > kMaxSealed) {
    fail(r, SSL_R_ENCRYPTED_LENGTH_TOO_LONG, kRecordOverflow, out);
    return false;
  }
  if (length <= kTagSize) {  // not even the content type inside
    fail(r, SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC, kBadRecordMac, out);
    return false;
  }
  return true;
}

std::optional<std::string_view> RecordLayer::next_record(std::string_view& in, Read& r,
                                                         std::string& out) {
  if (!partial_) {
    if (in.empty()) return std::nullopt;
    if (in.size() >= kHeader) {
      if (!check_header(in, r, out)) return std::nullopt;
      const std::size_t size = kHeader + body_length(in);
      if (in.size() >= size) return in.substr(0, size);  // read in place
    }
    partial_ = new (std::nothrow) std::string;
    if (!partial_) {
      fail(r, ERR_R_MALLOC_FAILURE, kNoAlert, out);
      return std::nullopt;
    }
  }
  // Cut by the caller's reads: gather the record's bytes.
  try {
    if (partial_->size() < kHeader) {
      const std::size_t take = std::min(kHeader - partial_->size(), in.size());
      partial_->append(in.substr(0, take));
      in.remove_prefix(take);
      r.consumed += take;
      if (partial_->size() < kHeader) return std::nullopt;
      if (!check_header(*partial_, r, out)) return std::nullopt;
      partial_->reserve(kHeader + body_length(*partial_));
    }
    const std::size_t size = kHeader + body_length(*partial_);
    const std::size_t take = std::min(size - partial_->size(), in.size());
    partial_->append(in.substr(0, take));
    in.remove_prefix(take);
    r.consumed += take;
    if (partial_->size() < size) return std::nullopt;
  } catch (const std::bad_alloc&) {
    fail(r, ERR_R_MALLOC_FAILURE, kNoAlert, out);
    return std::nullopt;
  }
  return std::string_view(*partial_);
}

RecordLayer::Read RecordLayer::read(std::string_view in, std::span<char> out,
                                    std::string& ciphertext_out) {
  Read r;
  if (failed_ || peer_closed_) return r;
  if (pending_) {
    const std::size_t n = std::min(pending_->size(), out.size());
    std::memcpy(out.data(), pending_->data(), n);
    pending_->erase(0, n);
    r.plaintext = n;
    if (!pending_->empty()) return r;
    delete std::exchange(pending_, nullptr);
  }
  while (!failed_ && !peer_closed_ && r.plaintext < out.size()) {
    const std::optional<std::string_view> record = next_record(in, r, ciphertext_out);
    if (!record) break;
    // Gathered in partial_ (already counted as consumed), or read in place.
    const bool held = partial_ != nullptr;
    open_record(*record, out, r, ciphertext_out);
    if (held) {
      delete std::exchange(partial_, nullptr);
    } else {
      in.remove_prefix(record->size());
      r.consumed += record->size();
    }
  }
  return r;
}

void RecordLayer::open_record(std::string_view record, std::span<char> out, Read& r,
                              std::string& cout) {
  const std::string_view header = record.substr(0, kHeader);
  const std::string_view sealed = record.substr(kHeader);
  const std::size_t inner_size = sealed.size() - kTagSize;
  const std::size_t room = out.size() - r.plaintext;
  // Straight into the caller's buffer when the whole record fits.
  std::uint8_t* inner =
      inner_size <= room ? reinterpret_cast<std::uint8_t*>(out.data() + r.plaintext) : scratch();
  std::uint8_t nonce[kIvSize];
  read_.nonce(nonce);
  if (read_.seq == std::numeric_limits<std::uint64_t>::max() ||
      !open(suite_, read_.key, nonce, header, sealed, inner)) {
    fail(r, SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC, kBadRecordMac, cout);
    return;
  }
  ++read_.seq;
  // TLSInnerPlaintext: content, the type, then zeros (RFC 8446 5.2).
  std::size_t end = inner_size;
  while (end > 0 && inner[end - 1] == 0) --end;
  if (end == 0) {
    fail(r, SSL_R_BAD_RECORD_TYPE, kUnexpectedMessage, cout);
    return;
  }
  const std::uint8_t type = inner[end - 1];
  const std::span<const std::uint8_t> content(inner, end - 1);
  if (content.size() > kMaxPlaintext) {
    fail(r, SSL_R_DATA_LENGTH_TOO_LONG, kRecordOverflow, cout);
    return;
  }
  if (handshake_size_ > 0 && type != kHandshake) {
    // A handshake message cut across records must not be interleaved.
    fail(r, SSL_R_UNEXPECTED_RECORD, kUnexpectedMessage, cout);
    return;
  }
  switch (type) {
    case kApplicationData:
      if (!content.empty()) key_updates_ = 0;
      if (inner != reinterpret_cast<std::uint8_t*>(out.data() + r.plaintext)) {
        const std::size_t n = std::min(content.size(), room);
        std::memcpy(out.data() + r.plaintext, content.data(), n);
        r.plaintext += n;
        if (n == content.size()) return;  // it fitted once its padding was gone
        pending_ = new (std::nothrow)
            std::string(reinterpret_cast<const char*>(content.data()) + n, content.size() - n);
        if (!pending_) fail(r, ERR_R_MALLOC_FAILURE, kNoAlert, cout);
      } else {
        r.plaintext += content.size();
      }
      return;
    case kAlert:
      on_alert(content, r, cout);
      return;
    case kHandshake:
      on_handshake(content, r, cout);
      return;
    default:
      fail(r, SSL_R_UNEXPECTED_RECORD, kUnexpectedMessage, cout);
      return;
  }
}

void RecordLayer::on_alert(std::span<const std::uint8_t> body, Read& r, std::string& cout) {
  if (body.size() != 2) {
    fail(r, SSL_R_INVALID_ALERT, kDecodeError, cout);
    return;
  }
  const int description = body[1];
  if (description == kCloseNotify) {
    peer_closed_ = true;
    r.peer_closed = true;
    return;
  }
  // user_canceled comes before a close_notify; every other alert is fatal
  // in TLS 1.3 whatever its level (RFC 8446 6.2), and is not answered.
  if (description == kUserCanceled) return;
  fail(r, SSL_AD_REASON_OFFSET + description, kNoAlert, cout);
}

void RecordLayer::on_handshake(std::span<const std::uint8_t> body, Read& r, std::string& cout) {
  if (body.empty()) {  // zero-length handshake fragments are forbidden (RFC 8446 5.1)
    fail(r, SSL_R_UNEXPECTED_MESSAGE, kUnexpectedMessage, cout);
    return;
  }
  for (std::size_t i = 0; i < body.size(); ++i) {
    handshake_[handshake_size_++] = body[i];
    // A client may send only KeyUpdate after the handshake: this server
    // never asks for a certificate, and tickets go the other way.
    if (handshake_size_ == 1 && body[i] != kKeyUpdate) {
      fail(r, SSL_R_UNEXPECTED_MESSAGE, kUnexpectedMessage, cout);
      return;
    }
    if (handshake_size_ == 4 && (handshake_[1] != 0 || handshake_[2] != 0 || handshake_[3] != 1)) {
      fail(r, SSL_R_BAD_LENGTH, kDecodeError, cout);
      return;
    }
    if (handshake_size_ < 5) continue;
    handshake_size_ = 0;
    const std::uint8_t request = handshake_[4];
    if (request > 1) {
      fail(r, SSL_R_BAD_KEY_UPDATE, kIllegalParameter, cout);
      return;
    }
    if (++key_updates_ > kMaxKeyUpdates) {
      fail(r, SSL_R_TOO_MANY_KEY_UPDATES, kUnexpectedMessage, cout);
      return;
    }
    // The key changes after this message: nothing may follow it in its record.
    if (i + 1 != body.size()) {
      fail(r, SSL_R_NOT_ON_RECORD_BOUNDARY, kUnexpectedMessage, cout);
      return;
    }
    if (!read_.update(suite_)) {
      fail(r, ERR_R_INTERNAL_ERROR, kInternalError, cout);
      return;
    }
    if (request == 1 && !closed_) {  // update_requested: answer before any more data
      const char answer[5] = {static_cast<char>(kKeyUpdate), 0, 0, 1, 0};
      if (const std::uint32_t e = seal_record(kHandshake, std::string_view(answer, 5), cout)) {
        failed_ = true;
        r.error = e;
        return;
      }
      if (!write_.update(suite_)) fail(r, ERR_R_INTERNAL_ERROR, kNoAlert, cout);
    }
  }
}

std::uint32_t RecordLayer::seal_record(std::uint8_t type, std::string_view data, std::string& out) {
  if (write_.seq == std::numeric_limits<std::uint64_t>::max())
    return ssl_error(ERR_R_INTERNAL_ERROR);
  const std::size_t at = out.size();
  const std::size_t length = data.size() + 1 + kTagSize;
  try {
    out.resize(at + kHeader + length);
  } catch (const std::bad_alloc&) {
    return ssl_error(ERR_R_MALLOC_FAILURE);
  }
  auto* p = reinterpret_cast<std::uint8_t*>(out.data() + at);
  p[0] = kApplicationData;  // the outer type of every protected record
  p[1] = 3;
  p[2] = 3;
  p[3] = static_cast<std::uint8_t>(length >> 8);
  p[4] = static_cast<std::uint8_t>(length);
  std::uint8_t nonce[kIvSize];
  write_.nonce(nonce);
  if (!seal(suite_, write_.key, nonce, std::string_view(out.data() + at, kHeader), data, type,
            p + kHeader)) {
    out.resize(at);
    return ssl_error(ERR_R_INTERNAL_ERROR);
  }
  ++write_.seq;
  return 0;
}

std::uint32_t RecordLayer::write(std::string_view plaintext, std::string& out) {
  if (failed_ || closed_) return ssl_error(SSL_R_PROTOCOL_IS_SHUTDOWN);
  while (!plaintext.empty()) {
    const std::string_view chunk = plaintext.substr(0, kMaxPlaintext);
    if (const std::uint32_t e = seal_record(kApplicationData, chunk, out)) {
      failed_ = true;
      return e;
    }
    plaintext.remove_prefix(chunk.size());
  }
  return 0;
}

std::uint32_t RecordLayer::close_notify(std::string& out) {
  if (failed_ || closed_) return ssl_error(SSL_R_PROTOCOL_IS_SHUTDOWN);
  const char body[2] = {1, static_cast<char>(kCloseNotify)};  // warning
  const std::uint32_t e = seal_record(kAlert, std::string_view(body, 2), out);
  closed_ = true;
  return e;
}

}  // namespace heartwheel::tls::detail
