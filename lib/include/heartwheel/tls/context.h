// heartwheel/tls/context.h - what every TLS connection of a server (or of a
// client) shares: role, certificates, trust, versions, ciphers, ALPN; on
// OpenSSL 3, reloadable from its files without a restart.
//
// What it is
//   A Context holds ONE OpenSSL SSL_CTX at a time, a "generation", built from
//   ContextOptions and the PEM files they name. Every tls::Session is made
//   from the generation current at that moment, and its SSL object keeps a
//   reference to that SSL_CTX for its whole life. reload() builds a complete
//   new generation from the same files and swaps it in: new handshakes use
//   the new certificate, sessions already made keep theirs, and the old
//   SSL_CTX is freed with the last session that uses it.
//
// Defaults (safe ones, as nginx and Mozilla's "intermediate" profile)
//   - TLS 1.2 and 1.3 only (min_version / max_version may narrow, never widen).
//   - Renegotiation off (SSL_OP_NO_RENEGOTIATION), compression off.
//   - TLS 1.2 ciphers: ECDHE key exchange with AES-GCM or ChaCha20-Poly1305
//     only (forward secrecy, AEAD); TLS 1.3: OpenSSL's three suites.
//   - ALPN: the server selects the first protocol of `alpn` that the client
//     offers ("http/1.1" by default); when the client offers none of them
//     the handshake goes on without ALPN (no alert). A client offers `alpn`.
//   - SNI: a server accepts the client's name and keeps it
//     (Session::server_name()); one certificate set serves every name. A
//     client sends its Session's server name (never an IP address literal).
//   - Resumption by session tickets (stateless: the server keeps no session
//     cache, so 100k clients cost it no memory beyond their connections),
//     one ticket per TLS 1.3 handshake (session_tickets).
//     Ticket keys belong to a generation: after reload() a ticket issued
//     before is refused and the client does a full handshake (as after an
//     nginx reload). A client Context with client_session_cache keeps the
//     newest session per resume key and offers it on the next connection.
//   - SSL_MODE_RELEASE_BUFFERS: an idle connection holds no record buffers.
//   - A client verifies the server's chain against `ca_file` (or the
//     system's store when empty) and the certificate's name against the
//     Session's server name (DNS name, or IP address), unless `insecure`.
//
// Errors
//   Construction throws std::invalid_argument for options that contradict
//   each other (validate()) and ContextError for a file that cannot be
//   used: missing, unreadable, not PEM, empty, an encrypted key (there is no
//   pass phrase prompt), a key that does not match its certificate. The
//   message names the file and the reason. reload() returns the same as a
//   value and leaves the current generation in use.
//
// Threads
//   Every member function may be called from any thread, concurrently: one
//   Context is meant to be shared by all the worker loops of a server while a
//   control thread calls reload() (e.g. on SIGHUP, from a loop's signal
//   watcher, never from a signal handler). The current generation is a
//   std::atomic<std::shared_ptr>; reload() calls are serialised by a mutex;
//   the client session cache has its own mutex.
//   Lifetime: a Context must outlive every Session made from it.
//
// Cost
//   Construction and reload(): reading and parsing the files (an RSA key
//   check costs milliseconds), off the loop's hot path. Making a Session:
//   one atomic shared_ptr load and SSL_new (see session.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct ssl_st;      // OpenSSL's SSL
struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace heartwheel::tls {

enum class Role : std::uint8_t { server, client };

// The protocol versions a Context may allow; nothing older than TLS 1.2.
enum class Version : std::uint8_t { tls1_2, tls1_3 };

// One certificate chain and its private key, PEM files.
struct CertificateFiles {
  std::string certificate;  // the leaf first, then the intermediates
  std::string key;          // the leaf's private key, unencrypted: ECDSA or RSA
};

// The TLS 1.2 cipher list and TLS 1.3 suites a Context uses unless told
// otherwise (OpenSSL cipher-list and ciphersuites syntax).
inline constexpr const char* kDefaultCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
inline constexpr const char* kDefaultCipherSuites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

// The most session tickets a full handshake may send (ContextOptions::
// session_tickets).
inline constexpr std::uint8_t kMaxSessionTickets = 8;

struct ContextOptions {
  Role role = Role::server;
  // Server: at least one; at most one per key type, so an ECDSA and an RSA
  // chain can be served side by side (the client's offer picks). Client:
  // none, or one: the certificate it presents when the server asks for one
  // (mutual TLS, e.g. redis-server with tls-auth-clients).
  std::vector<CertificateFiles> certificates;
  // Client: the certificates to trust (PEM). Empty: the system's store.
  std::string ca_file;
  // Client: do not verify the server at all. For tests and load harnesses.
  bool insecure = false;
  Version min_version = Version::tls1_2;
  Version max_version = Version::tls1_3;
  std::string ciphers = kDefaultCiphers;             // TLS 1.2
  std::string ciphersuites = kDefaultCipherSuites;  // TLS 1.3
  // Server: the protocols it selects, in its order of preference. Client:
  // the protocols it offers. Each 1..255 bytes. Empty: no ALPN.
  std::vector<std::string> alpn = {"http/1.1"};
  // Client: keep the newest session (ticket) per resume key (see
  // Session::client) and offer it on the next connection with that key.
  bool client_session_cache = false;
  // Server: once a TLS 1.3 handshake with AES-GCM or ChaCha20-Poly1305 is
  // done, free OpenSSL's SSL object (~13.4 KB per idle connection) and
  // protect the connection's records in the tls layer, keeping only its
  // traffic secrets and keys (~0.3 KB); see session.h, "After a server's
  // handshake". false: keep the SSL object for the connection's life
  // (Session::native_handle() stays valid). A client ignores it: its
  // sessions always keep the SSL object. TLS 1.2 keeps it too.
  bool free_ssl_after_handshake = true;
  // Server: how many session tickets a full TLS 1.3 handshake sends
  // (0..kMaxSessionTickets); after a resumed one OpenSSL sends one whatever
  // this says (none when 0). 1, where OpenSSL's and nginx's default is 2: a
  // client that keeps one connection and resumes with its newest ticket
  // needs one, and each resumption brings the next. A ticket costs the
  // server 15-23 us of CPU (the session encoded, encrypted and MACed; a
  // record) and the client ~250 bytes. More suit clients that open several
  // connections at once and use each ticket once (RFC 8446 C.4). 0: no
  // resumption at all (TLS 1.2's tickets are off too).
  std::uint8_t session_tickets = 1;

  // Throws std::invalid_argument naming the offending field.
  void validate() const;
};

// A file a Context could not use, and why ("no certificate in it", "key
// does not match the certificate in /etc/x/cert.pem", "No such file or
// directory").
struct LoadError {
  std::string file;
  std::string reason;
  // "FILE: REASON"
  std::string message() const { return file + ": " + reason; }
};

class ContextError : public std::runtime_error {
 public:
  explicit ContextError(LoadError error)
      : std::runtime_error(error.message()), error_(std::move(error)) {}
  const LoadError& error() const noexcept { return error_; }

 private:
  LoadError error_;
};

class Context {
 public:
  // Reads the files and builds the first generation.
  // Throws std::invalid_argument (options.validate()), ContextError (a
  // file), std::bad_alloc.
  explicit Context(ContextOptions options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Builds a new generation from the same files and makes it current.
  // Result: nullopt on success (generation() is one more); otherwise the
  // first file that failed and why, and nothing changed.
  std::optional<LoadError> reload();

  const ContextOptions& options() const noexcept { return options_; }
  Role role() const noexcept { return options_.role; }
  // 1 after construction, one more after each successful reload().
  std::uint64_t generation() const noexcept;

  // For tests and tools: the SSL_CTX of the current generation, with a
  // reference the caller must release (SSL_CTX_free).
  ssl_ctx_st* current_native_handle() const noexcept;

 private:
  friend class Session;
  struct Generation;
  struct ClientCache;

  // A new SSL object of the current generation; nullptr when out of memory.
  ssl_st* new_ssl() const noexcept;
  // The client session cache (client_session_cache), else nullptr.
  ClientCache* client_cache() const noexcept { return cache_.get(); }
  std::shared_ptr<const Generation> build(std::uint64_t number) const;

  const ContextOptions options_;
  std::unique_ptr<ClientCache> cache_;
  std::atomic<std::shared_ptr<const Generation>> current_;
  std::mutex reload_mutex_;
};

}  // namespace heartwheel::tls
