// heartwheel/tls/session.h - one TLS connection as a sans-I/O engine: bytes
// from the socket in, plaintext for the protocol and bytes for the socket out.
//
// What it is
//   A Session is one OpenSSL SSL object whose only I/O is the caller's
//   memory. feed() takes the bytes read from the socket and gives back the
//   plaintext they carried plus whatever TLS has to send in answer
//   (handshake messages, tickets, alerts); write() turns plaintext into
//   records to send; close() produces close_notify. The Session never
//   touches a socket, a loop or a clock and never calls back into the
//   protocol: OpenSSL reads from and writes to the buffers of the current
//   call only (one custom BIO per session whose data pointer is set for the
//   length of a call), and everything it decided comes back in the result.
//   The handshake's deadline is the caller's (FailureCause::timeout).
//
// Buffers and allocation
//   Ciphertext in: read in place from the caller's bytes (no copy into a
//   BIO). OpenSSL copies an incomplete record into its own record buffer
//   until the rest arrives; with SSL_MODE_RELEASE_BUFFERS that buffer is
//   freed once empty, so an idle session holds no record buffer.
//   Plaintext out: written into the caller's span (e.g. a per-thread 16-64
//   KiB buffer), never into a buffer of the session.
//   Ciphertext out: APPENDED to the caller's std::string (e.g. a per-thread
//   string the caller clears after handing it to the socket), which grows
//   only while it is smaller than what one call produces.
//   So a session allocates nothing per read or write beyond OpenSSL's own,
//   and sizeof(Session) is three pointers' worth (the SSL object is OpenSSL's).
//
// A server's SSL object comes with the first record
//   OpenSSL allocates everything a handshake needs at its first read (the
//   SSL object, both record buffers, the handshake message buffer and a
//   buffering BIO: ~70 KiB), whether or not the ClientHello is complete. So
//   a server Session makes its SSL object only once the first record has
//   fully arrived; until then it keeps the bytes of that record in a string
//   of their size (nothing at all when they arrived in one piece, as they
//   do from real clients). A peer that sends half a ClientHello and stalls
//   holds that string, not an SSL object, until the caller's handshake
//   deadline. Bytes that cannot start a TLS handshake record (plain HTTP,
//   garbage) go to OpenSSL at once, which fails them with its own reason.
//   Between flights (a server waiting for the client's Finished) the record
//   buffers are released too; the handshake's own state stays.
//
// After a server's handshake
//   With ContextOptions::free_ssl_after_handshake (the default), a server
//   session whose TLS 1.3 handshake is done (AES-GCM or ChaCha20-Poly1305)
//   keeps its two traffic secrets, their keys and IVs and its sequence
//   numbers, frees the SSL object and protects records itself (the tls
//   layer's record_layer.cpp on OpenSSL's AEADs; RFC 8446 5): an idle
//   connection then holds ~0.3 KB instead of ~13.4 KB. It reads application
//   data, close_notify and a client's KeyUpdate (answered when asked for);
//   anything else after the handshake fails it with the alert RFC 8446
//   names, as OpenSSL would. What the handshake agreed on stays readable
//   (resumed, alpn, server_name, version, cipher); native_handle() is null
//   from then on. TLS 1.2, client sessions, and a server whose SSL still
//   holds bytes keep the SSL object.
//
// Life
//   Server: Session::server(ctx), then feed() until handshake_done. Client:
//   Session::client(ctx, name), start() (the ClientHello), then feed().
//   Once established(): feed() gives plaintext, write() encrypts. A polite
//   end: close() appends close_notify (sent once; the peer's is not waited
//   for, as RFC 8446 6.1 allows); a close_notify from the peer shows as
//   FeedResult::peer_closed. A failure (FeedResult::failed) is final:
//   cause() and message() say why; anything left in ciphertext_out (an alert)
//   may be sent before closing the socket.
//
// Threads: one Session is used by one thread at a time (its connection's
//   loop); distinct Sessions, even of one Context, may be used from
//   different threads at once.
// Lifetime: the Context must outlive the Session. A Session may be moved
//   (not during a call) and destroyed at any time (no close_notify then).
#pragma once

#include <heartwheel/tls/context.h>
#include <heartwheel/tls/failure.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::tls {

namespace detail {
struct OwnRecords;  // session.cpp: the record layer and what the handshake agreed on
}

// What one feed() did. Several flags may be set at once (a handshake done
// and the first plaintext in the same bytes).
struct FeedResult {
  std::size_t consumed = 0;    // bytes of `ciphertext` taken; all of them
                               // unless plaintext_out filled up
  std::size_t plaintext = 0;   // bytes written at the start of plaintext_out
  bool plaintext_out_full = false;  // call again (with the rest of the
                                    // ciphertext, possibly none): more
                                    // plaintext may be ready
  bool handshake_done = false;  // the handshake completed (once per session)
  bool peer_closed = false;     // the peer's close_notify came (once)
  bool failed = false;          // the session failed now (cause(), message())
};

class Session {
 public:
  // An empty session: only assignment, destruction and valid() allowed.
  Session() noexcept = default;
  // A server-side session. Its SSL object is made, from the generation of
  // `context` current then, when the first record has arrived (see above);
  // making it allocates nothing. If that SSL_new fails, feed() fails the
  // session (cause other).
  // Preconditions: context.role() == Role::server.
  // Throws std::invalid_argument (wrong role).
  static Session server(const Context& context);
  // A client-side session. `server_name`: sent as SNI (unless it is an IP
  // address) and checked against the server's certificate (unless the
  // Context is insecure; empty: no name check, only the chain). `resume_key`:
  // with ContextOptions::client_session_cache, the key under which this
  // connection's session is kept and the previous one looked up (empty:
  // server_name).
  // Preconditions: context.role() == Role::client.
  // Throws std::invalid_argument (wrong role), std::bad_alloc.
  static Session client(const Context& context, std::string_view server_name,
                        std::string_view resume_key = {});

  Session(Session&& other) noexcept;
  Session& operator=(Session&& other) noexcept;
  ~Session();

  bool valid() const noexcept { return context_ != nullptr; }

  // Client: appends the ClientHello to `ciphertext_out`. Server: nothing.
  // Call once, before the first feed(). Result: false if the session failed
  // (e.g. no cipher allowed by the options; see cause()).
  bool start(std::string& ciphertext_out);

  // Takes `ciphertext` (bytes read from the socket, split anywhere) and
  // advances the handshake or decrypts. Plaintext goes to the start of
  // `plaintext_out`; what must be sent goes to the end of `ciphertext_out`.
  // After a failure, or with an empty plaintext_out, nothing is consumed.
  // The caller keeps calling while result.plaintext_out_full, passing what
  // was not consumed.
  FeedResult feed(std::string_view ciphertext, std::span<char> plaintext_out,
                  std::string& ciphertext_out);

  // Encrypts `plaintext` (all of it, in records of at most 16 KiB) and
  // appends the records to `ciphertext_out`.
  // Errors: errc::invalid_argument before the handshake is done;
  // errc::closed after close() or a failure (a write that fails makes the
  // session fail, cause other).
  std::error_code write(std::string_view plaintext, std::string& ciphertext_out);

  // Appends close_notify to `ciphertext_out`: the polite end of the
  // connection, after the last write(). Once; later calls, and calls before
  // the handshake is done or after a failure, append nothing.
  void close(std::string& ciphertext_out);

  // ---- state ------------------------------------------------------------------
  bool established() const noexcept { return state_ == State::established; }
  bool handshaking() const noexcept {
    return state_ == State::handshaking || state_ == State::first_record;
  }
  bool failed() const noexcept { return state_ == State::failed; }
  bool peer_closed() const noexcept { return peer_closed_; }  // close_notify came
  bool close_sent() const noexcept { return close_sent_; }
  FailureCause cause() const noexcept { return cause_; }
  // Why it failed, for a log line: "no shared cipher", "plain HTTP sent to a
  // TLS port (http request)", "certificate verify failed: self-signed
  // certificate"; empty if not failed.
  std::string message() const;

  // ---- what the handshake agreed on (meaningful once established) --------------
  bool resumed() const noexcept;             // by a ticket, without a full handshake
  std::string_view alpn() const noexcept;    // the selected protocol; empty: none
  // Server: the SNI name the client sent (empty: none). Client: the one sent.
  std::string_view server_name() const noexcept;
  std::string_view version() const noexcept;  // "TLSv1.3", "TLSv1.2"
  std::string_view cipher() const noexcept;   // "TLS_AES_128_GCM_SHA256", ...

  // The OpenSSL SSL object, for what this class does not wrap (the peer's
  // certificate, ...); nullptr for a server before its first record, and
  // after its handshake once it freed the SSL object (see above). Do not
  // do I/O on it.
  ssl_st* native_handle() const noexcept { return ssl(); }

 private:
  enum class State : std::uint8_t { first_record, handshaking, established, failed };
  Session(const Context& context, ssl_st* ssl, State state) noexcept
      : ssl_(ssl), context_(&context), state_(state) {}
  ssl_st* ssl() const noexcept {
    return state_ == State::first_record || own_records_ ? nullptr : ssl_;
  }
  // The SSL object, or the record layer that replaced it.
  bool live() const noexcept { return own_records_ || ssl() != nullptr; }
  // Server, first_record: keeps `ciphertext` while the first record is
  // incomplete (nullopt; failed if out of memory). Once it is complete, or
  // the bytes are no handshake record: how many bytes of `ciphertext` it
  // joined to the part held back (the rest is read in place); the caller
  // then makes the SSL object.
  std::optional<std::size_t> gather_first_record(std::string_view ciphertext);
  // Server, first_record: makes the SSL object (state handshaking, or failed
  // when out of memory) and returns the bytes gathered so far (or null).
  std::string* make_server_ssl() noexcept;
  FeedResult feed_ssl(std::string_view ciphertext, std::span<char> plaintext_out,
                      std::string& ciphertext_out);
  // After the handshake, on the session's own records.
  FeedResult feed_records(std::string_view ciphertext, std::span<char> plaintext_out,
                          std::string& ciphertext_out);
  // Server, TLS 1.3, the handshake just done, `tickets` what its last call
  // wrote: frees the SSL object for a record layer when the Context allows
  // it and everything it needs is at hand. false: the SSL object stays.
  bool drop_ssl(std::string_view tickets) noexcept;
  // Records the failure behind an SSL call's result `rc` (its SSL_get_error)
  // and clears the thread's OpenSSL error queue.
  void fail(int ssl_error) noexcept;
  void fail_with(FailureCause cause, std::uint32_t code) noexcept;
  void release() noexcept;  // frees what the session owns

  // Which one is live: records_ once own_records_; else first_record_ while
  // state_ is first_record, ssl_ after (nullptr only if making it failed).
  union {
    ssl_st* ssl_ = nullptr;
    std::string* first_record_;  // the first record's bytes so far, or null
    detail::OwnRecords* records_;
  };
  const Context* context_ = nullptr;
  std::uint32_t error_ = 0;  // the packed OpenSSL error that failed it
  State state_ = State::handshaking;
  FailureCause cause_ = FailureCause::none;
  bool peer_closed_ : 1 = false;
  bool close_sent_ : 1 = false;
  bool own_records_ : 1 = false;  // the SSL object is freed: records_ is live
};

}  // namespace heartwheel::tls
