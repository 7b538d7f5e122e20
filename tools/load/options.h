// tools/load/options.h - what one heartwheel-load run is asked to do.
//
// The supervisor parses the command line into LoadOptions once, validates it,
// and hands every child process the same options plus its share (see
// ProcessShare): child k of P owns the connections whose global index i has
// i % P == k. Connection i connects to targets[i % targets.size()] from
// source_ips[i % source_ips.size()]. Its local index in its process is
// j = i / P, and it is dead when floor((j+1) * dead_fraction) >
// floor(j * dead_fraction): every process gets its exact share of dead
// connections, spread evenly over its run. (Deciding by the global index i
// instead put every dead connection on odd processes when P was even.)
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "reconnect.h"

namespace CLI {
class App;
}

namespace heartwheel::load {

enum class Mode { echo, rpc, http, ws };

const char* mode_name(Mode m) noexcept;

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  sockaddr_in addr{};  // resolved at parse time (IPv4 literals and "localhost")
};

struct LoadOptions {
  std::vector<Endpoint> targets;
  std::uint64_t connections = 100;
  unsigned processes = 1;
  std::vector<sockaddr_in> source_ips;  // empty: let the kernel choose
  // With source_ips: connection i binds port source_port_lo + (i / ips + offset) mod range,
  // where offset is random per run. Binding a known port is O(1); a kernel
  // port search at connect() slows down as an address's ports fill up.
  // source_port_lo == 0: let the kernel pick at connect (IP_BIND_ADDRESS_NO_PORT).
  std::uint16_t source_port_lo = 10000;
  std::uint16_t source_port_hi = 60999;
  std::uint64_t port_offset = 0;         // chosen by the supervisor once per run (not a flag)
  // An agent's pipe (agent.cpp): the supervisor writes each timeline point
  // there as a JSON line; -1: none. Not a flag.
  int progress_fd = -1;
  double connect_rate = 2000;            // new connections per second, whole run
  unsigned max_pending_connects = 1000;  // per process, connects in flight
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(10);
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  std::chrono::nanoseconds grace = std::chrono::seconds(5);
  Mode mode = Mode::echo;
  std::size_t message_size = 64;
  std::chrono::nanoseconds message_interval = std::chrono::seconds(1);
  std::chrono::nanoseconds heartbeat{0};  // rpc: PING after this long without writing
  std::string http_path = "/";
  // ws mode (tools/load/ws_session.cpp, README "ws mode"): subscriber i joins
  // channel channel_prefix + (i / targets) mod channels; a publisher
  // connection per target (publish_targets all) or on the first target only.
  std::string ws_path = "/ws";
  // The protocol spoken: heartwheel-chat's (docs/chat-protocol.md) or
  // Centrifugo's client protocol v2, JSON (docs/centrifugo.md; its path
  // /connection/websocket unless --ws-path says otherwise).
  bool ws_centrifugo = false;
  std::uint64_t channels = 1;
  std::string channel_prefix = "load-";
  double publish_rate = 1;                     // publications per second, whole run; 0: none
  bool publish_all_targets = true;             // false: the first target only (a shared broker)
  bool ws_compression = false;   // offer permessage-deflate (stateless), inflate what comes so
  std::size_t publish_size = 0;  // pad each publication's data to about this many bytes (0: none)
  std::chrono::nanoseconds publish_start{-1};  // < 0: connections / connect_rate + 1s
  std::chrono::nanoseconds publish_stop_before = std::chrono::seconds(2);
  double reconnect_fraction = 0;  // live subscribers that drop and reconnect once with `since`
  std::chrono::nanoseconds reconnect_at{-1};  // < 0: the middle of the publish window
  std::chrono::nanoseconds reconnect_delay = std::chrono::seconds(1);
  bool expect_delivery = false;  // exit 3 unless every publication reached every live subscriber
  double dead_fraction = 0;
  std::chrono::nanoseconds expect_idle_close{0};  // 0: no expectation
  std::chrono::nanoseconds idle_close_slack = std::chrono::seconds(1);
  std::chrono::nanoseconds tick = std::chrono::milliseconds(1);
  std::string json_path;
  bool quiet = false;
  bool linger_reset = false;  // close with RST at the end (no TIME_WAIT)
  ReconnectOptions reconnect;  // --auto-reconnect and its backoff (reconnect.h)
  // --tls (tls_conn.cpp): every connection speaks TLS; the connect timeout
  // covers the handshake too. Verified against tls_ca (empty: the system's
  // store) unless tls_insecure; tls_resume offers the last session's ticket.
  bool tls = false;
  std::string tls_ca;
  bool tls_insecure = false;
  bool tls_resume = false;
  std::string tls_server_name;  // SNI and the name checked; empty: the target's host
  // Set by a coordinator on an agent's share (hidden flags; README "Across
  // hosts"): whether this host's worker 0 runs the ws publisher (agent 0's
  // only: one publisher for the whole run), and this host's CLOCK_MONOTONIC
  // minus the coordinator's, so that a publication's stamp and its delivery
  // are read on one clock (the coordinator's) on every host.
  bool ws_publisher = true;
  std::int64_t clock_offset_ns = 0;
};

// Registers every flag on `app`, writing into `options`.
void add_options(CLI::App& app, LoadOptions& options);

// Cross-field checks after parsing; throws std::invalid_argument with a
// message that says which flag to change.
void validate(const LoadOptions& options);

// "127.0.0.1-127.0.0.8,127.0.1.1": every address in the ranges, in order.
// Throws std::invalid_argument on a malformed list.
std::vector<sockaddr_in> parse_source_ips(const std::string& text);

// "LO-HI" (1..65535) or "kernel" (lo = hi = 0).
void parse_source_ports(const std::string& text, std::uint16_t& lo, std::uint16_t& hi);

// "HOST:PORT[,HOST:PORT...]" with IPv4 literals or localhost.
std::vector<Endpoint> parse_targets(const std::string& text);

// One child's slice of the run.
struct ProcessShare {
  unsigned index = 0;         // k
  unsigned count = 1;         // P
  std::uint64_t connections;  // how many global indices i have i % P == k
};
ProcessShare share_of(const LoadOptions& options, unsigned index);

// `j`: the connection's local index in its process (see the top of this file).
inline bool is_dead(double fraction, std::uint64_t j) noexcept {
  return static_cast<std::uint64_t>(static_cast<double>(j + 1) * fraction) >
         static_cast<std::uint64_t>(static_cast<double>(j) * fraction);
}

// ws mode: when publishing starts and stops, and when reconnecting clients
// drop, from the start of the run (defaults resolved).
std::chrono::nanoseconds publish_start_of(const LoadOptions& options);
std::chrono::nanoseconds publish_stop_of(const LoadOptions& options);
std::chrono::nanoseconds reconnect_at_of(const LoadOptions& options);

// Highest connection count one process may hold: the file limit (20000 here)
// minus room for the loop's own descriptors.
std::uint64_t per_process_connection_limit();

}  // namespace heartwheel::load
