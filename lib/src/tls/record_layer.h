// TLS 1.3 records after a server's handshake, without OpenSSL's SSL object
// (private to the tls layer; Session is the user).
//
// Why
//   An idle established OpenSSL 3.0 server session holds ~13.4 KB in 38
//   blocks (tests/unit/tls_memory_test.cpp; docs/memory.md has the table):
//   the SSL object alone is 7.6 KB (its record layer keeps 32 pipelines'
//   record and buffer slots inline), the rest the handshake's leftovers
//   (both key shares, the transcript hashes, the certificate slots, the
//   peer's lists), none of which the public API can free. After a TLS 1.3
//   handshake a server needs only its two traffic secrets, their keys and
//   IVs and two sequence numbers: ~230 bytes. So the Session frees the SSL
//   object and protects records here (RFC 8446 5), on OpenSSL's AEADs
//   (record_crypto.h).
//
// What it does, and what it refuses
//   Reads: application data; close_notify (peer_closed); user_canceled
//   (ignored, RFC 8446 6.1); any other alert fails the session with the
//   alert's OpenSSL reason; a KeyUpdate from the client (RFC 8446 4.6.3)
//   moves the read key on and, when the client asks, answers with one of
//   its own and moves the write key on. Everything else fails with the
//   alert RFC 8446 names, sent before closing: an outer type other than
//   application_data or a version other than 0x0303 (unexpected_message,
//   decode_error), a record over 2^14 + 256 bytes (record_overflow), a tag
//   that does not verify (bad_record_mac), an inner plaintext of zeros or
//   over 2^14 bytes (unexpected_message, record_overflow), a handshake
//   message other than KeyUpdate, or one not ending its record
//   (unexpected_message), a KeyUpdate with a bad length or request
//   (decode_error, illegal_parameter), more than 32 KeyUpdates in a row
//   without application data between them (unexpected_message; OpenSSL's
//   limit too: each may ask for an answer, so a flood would otherwise make
//   the server write for nothing). Writes: application data in records
//   of at most 2^14 bytes, no padding; close_notify.
//
// Memory: the object itself (below 256 bytes), plus, only while it is
// needed, the bytes of a record cut by the caller's reads (up to one record)
// and the plaintext of one record that did not fit the caller's buffer.
//
// Threads: one thread at a time (the Session's). Errors: packed OpenSSL
// error codes (ERR_PACK of ERR_LIB_SSL and an SSL_R_ reason, or the
// SSL_AD_REASON_OFFSET + alert reason of an alert received), so
// failure.cpp classifies and words them as it does OpenSSL's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "record_crypto.h"
#include "traffic_secrets.h"

namespace heartwheel::tls::detail {

// How many whole records `bytes` holds, if it is exactly a run of records
// (5-byte headers and their bodies); nullopt otherwise.
std::optional<std::uint64_t> count_records(std::string_view bytes) noexcept;

// One direction's keys (RFC 8446 7.3).
struct TrafficKeys {
  std::uint8_t secret[kMaxSecretSize] = {};
  std::uint8_t key[kMaxKeySize] = {};
  std::uint8_t iv[kIvSize] = {};
  std::uint64_t seq = 0;  // the next record's sequence number

  // key and iv from secret; seq 0.
  bool derive(Suite suite) noexcept;
  // The next generation after a KeyUpdate (RFC 8446 7.2): secret, key, iv, seq 0.
  bool update(Suite suite) noexcept;
  // The per-record nonce: iv XOR the sequence number (RFC 8446 5.3).
  void nonce(std::uint8_t out[kIvSize]) const noexcept;
};

class RecordLayer {
 public:
  struct Read {
    std::size_t consumed = 0;   // bytes of the input taken
    std::size_t plaintext = 0;  // bytes written at the start of the output
    bool peer_closed = false;   // close_notify came (reading stops)
    std::uint32_t error = 0;    // non-zero: failed now (any alert is in the output)
  };

  RecordLayer() = default;
  RecordLayer(const RecordLayer&) = delete;
  RecordLayer& operator=(const RecordLayer&) = delete;
  ~RecordLayer();

  // Keys from a server's handshake: reads with the client's secret from
  // sequence number 0, writes with the server's from `written` (the records
  // the server already sent under it: its session tickets). false if a
  // secret is missing or its size is not the suite's, or a derivation failed.
  bool start(Suite suite, const TrafficSecrets& secrets, std::uint64_t written) noexcept;

  // Takes records from `in` (cut anywhere) until it is used up, `out` is
  // full, the peer closed, or a failure; appends what must be sent (a
  // KeyUpdate's answer, a fatal alert) to `ciphertext_out`. Nothing after a
  // failure or close_notify.
  Read read(std::string_view in, std::span<char> out, std::string& ciphertext_out);

  // Appends `plaintext` as application data records. Result: 0, or the
  // error that failed the layer (out of memory, or after a failure).
  std::uint32_t write(std::string_view plaintext, std::string& ciphertext_out);

  // Appends close_notify. Result as write().
  std::uint32_t close_notify(std::string& ciphertext_out);

  Suite suite() const noexcept { return suite_; }

 private:
  std::optional<std::string_view> next_record(std::string_view& in, Read& r, std::string& out);
  bool check_header(std::string_view header, Read& r, std::string& out);
  void open_record(std::string_view record, std::span<char> out, Read& r, std::string& cout);
  void on_alert(std::span<const std::uint8_t> body, Read& r, std::string& cout);
  void on_handshake(std::span<const std::uint8_t> body, Read& r, std::string& cout);
  std::uint32_t seal_record(std::uint8_t type, std::string_view data, std::string& out);
  // Fails the layer with `reason` and, when alert >= 0, sends that fatal alert.
  void fail(Read& r, int reason, int alert, std::string& out);

  TrafficKeys read_;
  TrafficKeys write_;
  std::string* partial_ = nullptr;  // a record cut by the caller's reads, until it is whole
  std::string* pending_ = nullptr;  // application data the caller had no room for
  std::uint8_t handshake_[5] = {};  // a KeyUpdate cut across records (type, length, request)
  std::uint8_t handshake_size_ = 0;
  std::uint8_t key_updates_ = 0;  // KeyUpdates since the last application data
  Suite suite_ = Suite::aes_128_gcm_sha256;
  bool failed_ = false;
  bool peer_closed_ = false;  // close_notify came
  bool closed_ = false;       // close_notify sent: nothing more goes out
};

}  // namespace heartwheel::tls::detail
