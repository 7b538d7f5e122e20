// cli/tls_flags.h - the TLS flags every heartwheel server program shares
// (issue 21): --tls-cert FILE --tls-key FILE [--tls-handshake-timeout D]
// [--tls-keep-ssl], and the certificate reload on SIGHUP; and a client's --tls [--tls-ca FILE
// | --tls-insecure]. add_server_flags / apply_server_flags
// (server_flags.h) register and apply them; a program adds only the reload:
//
//   const cli::SighupReload reload(tls::server_context(options.transport.get()),
//                                  "heartwheel-echo");   // before serving
//
// Errors: make_tls throws std::invalid_argument naming the flag (one of
// --tls-cert / --tls-key without the other, a bad duration) and
// tls::ContextError naming the file and the reason.
//
// Threads: call from main() only. SighupReload runs a thread of its own (so
// construct it after any fork).
#pragma once

#include <heartwheel/net/byte_stage.h>
#include <heartwheel/tls/context.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace CLI {
class App;
}

namespace heartwheel::cli {

struct TlsFlags {
  std::string cert;
  std::string key;
  std::string handshake_timeout = "10s";
  bool keep_ssl = false;  // ContextOptions::free_ssl_after_handshake = false
};

// Registers --tls-cert, --tls-key, --tls-handshake-timeout, --tls-keep-ssl.
void add_tls_flags(CLI::App& app, TlsFlags& flags);

struct TlsSetup {
  std::shared_ptr<tls::Context> context;
  std::shared_ptr<net::ByteStageFactory> transport;  // for ServerOptions::transport
};

// The server Context and its transport, or nullopt without --tls-cert.
std::optional<TlsSetup> make_tls(const TlsFlags& flags);

// The client side, for programs that connect (heartwheel-rpc-client):
// --tls [--tls-ca FILE | --tls-insecure]. The name sent (SNI) and checked is
// the host the program connects to (an IP literal is checked against the
// certificate's IP addresses and not sent, RFC 6066).
struct TlsClientFlags {
  bool tls = false;
  std::string ca;
  bool insecure = false;
};

// Registers --tls, --tls-ca, --tls-insecure.
void add_tls_client_flags(CLI::App& app, TlsClientFlags& flags);

// The client Context, or nullptr without --tls. Throws std::invalid_argument
// naming the flag (--tls-ca or --tls-insecure without --tls, or both) and
// tls::ContextError naming the file (an unreadable --tls-ca).
std::shared_ptr<tls::Context> make_tls_client(const TlsClientFlags& flags);

// What a program's client TLS flags say, whatever they are called
// (--tls-ca, --redis-tls-ca, ...): the one place a client Context is made
// from them (heartwheel-rpc-client, the Redis link, heartwheel-load).
struct ClientContextFlags {
  std::string ca;         // trust these certificates (PEM); empty: the system's store
  bool insecure = false;  // verify nothing (tests and load harnesses only)
  std::string cert;       // a client certificate to present (mutual TLS), with
  std::string key;        // its key; both or neither
  std::vector<std::string> alpn = {"http/1.1"};  // offered; empty: no ALPN
  bool session_cache = false;  // keep and offer session tickets (resumption)
};

// A client Context from `flags`. The caller refuses contradictions first
// in its own flags' words; what is left throws std::invalid_argument
// (tls::ContextOptions::validate) or tls::ContextError naming a file and
// its reason (unreadable CA, a key not matching its certificate).
std::shared_ptr<tls::Context> client_context(const ClientContextFlags& flags);

// Reloads `context` from its files on every SIGHUP (as nginx does after a
// certificate renewal) on a thread of its own, and says so in the log:
// "PROGRAM: tls: certificates reloaded (generation N)" or
// "PROGRAM: tls: reload refused, still serving the old certificates: FILE: REASON".
// With a null context it does nothing (no signal watcher: SIGHUP keeps its
// default meaning). Stops in its destructor.
class SighupReload {
 public:
  SighupReload(std::shared_ptr<tls::Context> context, std::string program);
  ~SighupReload();
  SighupReload(const SighupReload&) = delete;
  SighupReload& operator=(const SighupReload&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace heartwheel::cli
