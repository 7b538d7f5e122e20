// cli/server_flags.h - the protection flags every heartwheel server program
// shares (heartwheel-echo, heartwheel-http, heartwheel-rpc-server): the
// connection limit, the PROXY protocol, the per-address limit and overload
// protection. Registered in one place, written into net::ServerOptions in
// one place, documented once here and in each program's README.
//
//   cli::ServerFlags sf;
//   cli::add_server_flags(app, sf);
//   ... parse ...
//   try { cli::apply_server_flags(sf, workers.server); }   // std::invalid_argument:
//   catch (...) { usage error }                            // names the flag
//
// Threads: call from main() only.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tls_flags.h"

namespace CLI {
class App;
}
namespace heartwheel::net {
struct ServerOptions;
}

namespace heartwheel::cli {

struct ServerFlags {
  std::size_t max_connections = 0;
  std::size_t accept_batch = 16;       // net::ServerOptions::accept_batch's default
  std::size_t resume_batch = 32;       // net::ServerOptions::resume_batch's default
  bool level_triggered_reads = false;  // !ConnectionOptions::edge_triggered_reads
  bool proxy_protocol = false;
  std::string proxy_header_timeout = "5s";
  std::vector<std::string> proxy_protocol_from;  // CIDR networks, repeatable
  std::size_t max_connections_per_ip = 0;
  bool drop_idle_at_limit = false;
  std::string drop_idle_after = "5s";
  std::size_t overload_start = 0;
  std::size_t overload_saturation = 0;
  std::size_t overload_memory_start = 0;  // bytes
  std::size_t overload_memory_saturation = 0;
  double overload_min_scale = 1.0;
  std::string overload_min_timeout = "0";
  TlsFlags tls;  // --tls-cert, --tls-key, --tls-handshake-timeout, --tls-keep-ssl (tls_flags.h)
  std::string pid_file;  // --pid-file (health.h)
  std::string program;  // the app's name, set by add_server_flags (for the warning line)
};

// Registers --max-connections, --accept-batch, --resume-batch, --level-triggered-reads,
// --proxy-protocol, --proxy-header-timeout,
// --proxy-protocol-from (repeatable),
// --max-connections-per-ip, --drop-idle-at-limit, --drop-idle-after,
// --overload-start, --overload-saturation, --overload-memory-start,
// --overload-memory-saturation, --overload-min-scale, --overload-min-timeout,
// --tls-cert, --tls-key, --tls-handshake-timeout, --tls-keep-ssl, --pid-file (written by
// announce_listening once listening; a restart's successor rewrites it).
// A program with --tls-cert reloads its certificates on SIGHUP with
// `SighupReload reload(tls::server_context(options.transport.get()), NAME)`.
void add_server_flags(CLI::App& app, ServerFlags& flags);

// Writes the flags into `options` (max_connections, accept_batch, resume_batch, proxy_protocol,
// proxy_protocol_from: a bad network or the flag without --proxy-protocol is
// refused naming it; --proxy-protocol without it prints
// "NAME: warning: --proxy-protocol without --proxy-protocol-from trusts every peer"
// in the log (common/log.h),
// max_connections_per_ip, overload, transport: TLS with --tls-cert; a
// certificate file that cannot be used throws tls::ContextError naming it). Throws
// std::invalid_argument naming the flag: a bad duration, one of a start/saturation pair without the
// other,
// --overload-min-scale with --overload-min-timeout, thresholds without a
// floor or a floor without thresholds, --drop-idle-at-limit without
// --max-connections.
void apply_server_flags(const ServerFlags& flags, net::ServerOptions& options);

}  // namespace heartwheel::cli
