// Helpers for the tls tests: certificates made at test time with the
// `openssl` command line, contexts from them, and two Sessions talking
// through memory.
#pragma once

#include <heartwheel/tls/context.h>
#include <heartwheel/tls/session.h>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace tls_test {

namespace tls = heartwheel::tls;

// Self-signed certificates (CA:TRUE, so each is also its own trust anchor)
// for DNS:localhost and IP:127.0.0.1, made once per test binary into a
// temporary folder removed at exit.
struct Certs {
  tls::CertificateFiles ec_one;   // ECDSA P-256, CN=ec-one
  tls::CertificateFiles ec_two;   // ECDSA P-256, CN=ec-two
  tls::CertificateFiles rsa;      // RSA 2048, CN=rsa-one
  tls::CertificateFiles stranger; // ECDSA P-256, CN=stranger: nobody trusts it
  std::string encrypted_key;      // ec_one's key, encrypted with a pass phrase
  std::string dir;
  std::string file(const std::string& name) const { return dir + "/" + name; }
};
const Certs& certs();

// A copy of `source` at `target` (replacing it), as a renewal would.
void copy_file(const std::string& source, const std::string& target);
void write_file(const std::string& path, std::string_view text);
// `name`.crt and `name`.key in the certificates' folder, copies of `from`'s:
// the files a server is started on and that a renewal then replaces.
tls::CertificateFiles live_copy(const std::string& name, const tls::CertificateFiles& from);

tls::ContextOptions server_options(const tls::CertificateFiles& cert);
// Trusts `trusted` (a certificate file); empty: insecure.
tls::ContextOptions client_options(const std::string& trusted = {});

// One end of a connection through memory.
struct End {
  explicit End(tls::Session s) : session(std::move(s)) {}
  tls::Session session;
  std::string out;       // ciphertext produced, not yet delivered
  std::string received;  // plaintext that came out of feed()
  int handshakes_done = 0;
  int peer_closes = 0;
  int failures = 0;
};

// Feeds `bytes` to `to` in pieces of at most `chunk` bytes, through a
// 4 KiB plaintext buffer (so large records fill it and feed() is called
// again), collecting flags and plaintext.
void deliver(End& to, std::string_view bytes, std::size_t chunk = std::numeric_limits<std::size_t>::max());

// Moves ciphertext both ways until neither side has anything to send
// (REQUIREs that they stop within 64 rounds).
void pump(End& a, End& b, std::size_t chunk = std::numeric_limits<std::size_t>::max());
// The same without Catch2's macros (for other threads): false if the two
// sides had not stopped talking after 64 rounds.
bool exchange(End& a, End& b, std::size_t chunk = std::numeric_limits<std::size_t>::max());

// A client and a server session of these contexts, the ClientHello sent and
// everything pumped: established unless the handshake failed.
struct Pair {
  End client;
  End server;
};
Pair connect(const tls::Context& client, const tls::Context& server,
             std::string_view server_name = "localhost", std::string_view resume_key = {});
// The same without Catch2's macros (for other threads): check the sessions.
Pair try_connect(const tls::Context& client, const tls::Context& server,
                 std::string_view server_name = "localhost");

// The common name of the certificate the peer of `session` showed ("" if none).
std::string peer_common_name(const tls::Session& session);

// `n` pseudo-random bytes, the same for the same seed.
std::string random_bytes(std::size_t n, unsigned seed);
// "EC", "RSA": the type of the peer certificate's key.
std::string peer_key_type(const tls::Session& session);

}  // namespace tls_test
