#include "options.h"

#include <arpa/inet.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "duration.h"

namespace heartwheel::load {

namespace {

sockaddr_in parse_ipv4(const std::string& text) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  const std::string host = text == "localhost" ? "127.0.0.1" : text;
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    throw std::invalid_argument(
        "'" + text + "' is not an IPv4 address (hostnames other than localhost are not resolved)");
  return a;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto pos = s.find(sep, start);
    const auto end = pos == std::string::npos ? s.size() : pos;
    if (end > start) out.push_back(s.substr(start, end - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

// A duration flag: it keeps its text form in --help and lands in a
// std::chrono::nanoseconds; a bad value is a usage error that names the flag.
CLI::Option* add_duration(CLI::App& app, const std::string& name, std::chrono::nanoseconds& into,
                          const std::string& help) {
  const std::string flag = name.substr(name.rfind(',') + 1);  // "-d,--duration" -> "--duration"
  return app
      .add_option_function<std::string>(
          name,
          [&into, flag](const std::string& text) {
            try {
              into = parse_duration(text);
            } catch (const std::invalid_argument& e) {
              throw CLI::ValidationError(flag, e.what());
            }
          },
          help)
      ->default_str(format_duration(into))
      ->type_name("DURATION");
}

}  // namespace

const char* mode_name(Mode m) noexcept {
  switch (m) {
    case Mode::echo:
      return "echo";
    case Mode::rpc:
      return "rpc";
    case Mode::http:
      return "http";
    case Mode::ws:
      return "ws";
  }
  return "?";
}

std::vector<sockaddr_in> parse_source_ips(const std::string& text) {
  std::vector<sockaddr_in> out;
  for (const auto& part : split(text, ',')) {
    const auto address = [&part](const std::string& one) {
      try {
        return parse_ipv4(one);
      } catch (const std::invalid_argument& bad) {
        throw std::invalid_argument("--source-ips '" + part + "': " + bad.what());
      }
    };
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(address(part));
      continue;
    }
    const auto lo = ntohl(address(part.substr(0, dash)).sin_addr.s_addr);
    const auto hi = ntohl(address(part.substr(dash + 1)).sin_addr.s_addr);
    if (hi < lo || hi - lo >= 65536)
      throw std::invalid_argument("--source-ips range '" + part +
                                  "' is reversed or longer than 65536 addresses");
    for (auto ip = lo; ip <= hi; ++ip) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(ip);
      out.push_back(a);
    }
  }
  if (out.empty()) throw std::invalid_argument("--source-ips: no address given");
  return out;
}

void parse_source_ports(const std::string& text, std::uint16_t& lo, std::uint16_t& hi) {
  if (text == "kernel") {
    lo = hi = 0;
    return;
  }
  unsigned a = 0, b = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%u-%u%c", &a, &b, &tail) != 2 || a < 1 || b > 65535)
    throw std::invalid_argument("--source-ports '" + text +
                                "': write LO-HI within 1-65535, or 'kernel'");
  if (a > b)
    throw std::invalid_argument("--source-ports '" + text +
                                "' is reversed: write LO-HI with LO <= HI");
  lo = static_cast<std::uint16_t>(a);
  hi = static_cast<std::uint16_t>(b);
}

std::vector<Endpoint> parse_targets(const std::string& text) {
  std::vector<Endpoint> out;
  for (const auto& part : split(text, ',')) {
    const auto colon = part.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw std::invalid_argument("--target '" + part + "' must be HOST:PORT");
    Endpoint e;
    e.host = part.substr(0, colon);
    const std::string port = part.substr(colon + 1);
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p <= 0 || p > 65535)
      throw std::invalid_argument("--target '" + part + "': port must be 1..65535");
    e.port = static_cast<std::uint16_t>(p);
    try {
      e.addr = parse_ipv4(e.host);
    } catch (const std::invalid_argument& bad) {
      throw std::invalid_argument("--target '" + part + "': " + bad.what());
    }
    e.addr.sin_port = htons(e.port);
    out.push_back(e);
  }
  if (out.empty()) throw std::invalid_argument("--target: no HOST:PORT given");
  return out;
}

void add_options(CLI::App& app, LoadOptions& o) {
  app.add_option_function<std::string>(
         "-t,--target", [&o](const std::string& s) { o.targets = parse_targets(s); },
         "Server(s) to connect to, HOST:PORT[,HOST:PORT...]; connection i goes to target i mod "
         "count")
      ->required()
      ->type_name("LIST");
  app.add_option("-c,--connections", o.connections, "Connections to open in total")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{10'000'000}));
  app.add_option(
         "-p,--processes", o.processes,
         "Worker processes to spread the connections over (each stays under the open-file limit)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  app.add_option_function<std::string>(
         "--source-ips", [&o](const std::string& s) { o.source_ips = parse_source_ips(s); },
         "Local addresses to bind before connect, e.g. 127.0.0.1-127.0.0.8; each address gives "
         "~28k "
         "ports per target (default: the kernel chooses)")
      ->type_name("RANGES");
  app.add_option_function<std::string>(
         "--source-ports",
         [&o](const std::string& s) { parse_source_ports(s, o.source_port_lo, o.source_port_hi); },
         "With --source-ips: local ports the harness assigns itself (O(1) bind; the kernel's port "
         "search "
         "slows down as an address fills up), or 'kernel' to let connect() choose")
      ->default_str("10000-60999")
      ->type_name("LO-HI");
  app.add_option("--connect-rate", o.connect_rate,
                 "New connections per second over all processes (ramp)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-pending-connects", o.max_pending_connects, "Connects in flight per process (with --tls: until the handshake is over)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  add_duration(app, "--connect-timeout", o.connect_timeout,
               "Give up a connect attempt (with --tls: and its handshake) after this long");
  app.add_flag("--tls", o.tls,
               "Every connection speaks TLS (1.2/1.3, ALPN http/1.1); the report's "
               "tls_handshake_us histogram times each handshake from the TCP connect");
  app.add_option("--tls-ca", o.tls_ca,
                 "With --tls: trust the certificates in this PEM file (default: the system's)");
  app.add_flag("--tls-insecure", o.tls_insecure,
               "With --tls: do not verify the server's certificate");
  app.add_flag("--tls-resume", o.tls_resume,
               "With --tls: each connection offers the newest session ticket of its target "
               "(resumed handshakes; counted in tls_resumed)");
  app.add_option("--tls-server-name", o.tls_server_name,
                 "With --tls: the name sent (SNI) and checked (default: the target's host)");
  add_duration(app, "-d,--duration", o.duration, "Length of the run from start, ramp included");
  add_duration(
      app, "--grace", o.grace,
      "After --duration, how long processes get to report and close before they are killed (one "
      "killed after reporting loses nothing)");
  app.add_option_function<std::string>(
         "-m,--mode",
         [&o](const std::string& s) {
           if (s == "echo")
             o.mode = Mode::echo;
           else if (s == "rpc")
             o.mode = Mode::rpc;
           else if (s == "http")
             o.mode = Mode::http;
           else if (s == "ws")
             o.mode = Mode::ws;
           else
             throw CLI::ValidationError("--mode", "must be echo, rpc, http or ws");
         },
         "echo: raw bytes echoed back; rpc: REQUEST/RESPONSE frames with PING/PONG heartbeats; "
         "http: keep-alive GET requests; ws: WebSocket subscribers of heartwheel-chat's protocol "
         "and a publisher")
      ->default_str("echo")
      ->type_name("MODE");
  app.add_option("-s,--message-size", o.message_size,
                 "Bytes per echo message / RPC request payload (>= 16: two timestamps ride in it)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{16}, std::size_t{1} << 20));
  add_duration(
      app, "-i,--message-interval", o.message_interval,
      "Each connection sends one message (request) per interval, from the moment it connects; "
      "0 = silent");
  add_duration(app, "--heartbeat", o.heartbeat,
               "rpc: send a PING when nothing was written for this long (0 = never)");
  app.add_option("--http-path", o.http_path, "http: request target of the GET")
      ->capture_default_str();
  app.add_option("--ws-path", o.ws_path, "ws: the WebSocket endpoint's request target")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--ws-protocol",
         [&o](const std::string& v) {
           if (v != "chat" && v != "centrifugo")
             throw CLI::ValidationError("--ws-protocol", "must be chat or centrifugo");
           o.ws_centrifugo = v == "centrifugo";
         },
         "ws: chat (heartwheel-chat's protocol, docs/chat-protocol.md) or centrifugo "
         "(Centrifugo's client protocol v2, JSON, at /connection/websocket unless --ws-path is "
         "given: a connect, then the subscribe; the server's empty-command pings answered)")
      ->default_str("chat")
      ->type_name("PROTOCOL");
  app.add_option("--channels", o.channels,
                 "ws: channels; subscriber i joins channel (i / targets) mod K")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000}));
  app.add_option("--channel-prefix", o.channel_prefix,
                 "ws: channel names are PREFIX0, PREFIX1, ...")
      ->capture_default_str();
  app.add_flag("--ws-compression", o.ws_compression,
               "ws: offer permessage-deflate (server_no_context_takeover, "
               "client_no_context_takeover); compressed messages are inflated, the harness's own "
               "go uncompressed; a server that answers otherwise is a protocol error");
  app.add_option("--publish-size", o.publish_size,
                 "ws: pad each publication's data with a list of order lines (JSON that "
                 "compresses like real traffic) to about this many bytes; 0: {\"t\",\"k\"} only")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20));
  app.add_option("--publish-rate", o.publish_rate,
                 "ws: publications per second (publication k goes to channel k mod K); 0: none")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app.add_option_function<std::string>(
         "--publish-targets",
         [&o](const std::string& s) {
           if (s == "all")
             o.publish_all_targets = true;
           else if (s == "first")
             o.publish_all_targets = false;
           else
             throw CLI::ValidationError("--publish-targets", "must be all or first");
         },
         "ws: publish each publication on every target (independent servers) or on the first "
         "only (servers that share a broker)")
      ->default_str("all")
      ->type_name("all|first");
  add_duration(app, "--publish-start", o.publish_start,
               "ws: publishing starts this long after the start (default: connections / "
               "connect-rate + 1s)")
      ->default_str("auto");
  add_duration(app, "--publish-stop-before", o.publish_stop_before,
               "ws: publishing stops this long before --duration ends, so the last "
               "publications land before the count");
  app.add_option("--reconnect", o.reconnect_fraction,
                 "ws: this fraction of the live subscribers drops its connection once (RST) and "
                 "reconnects, resubscribing with since {offset, epoch}")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  add_duration(app, "--reconnect-at", o.reconnect_at,
               "ws: when the --reconnect subscribers drop (default: the middle of the publish "
               "window)")
      ->default_str("auto");
  add_duration(app, "--reconnect-delay", o.reconnect_delay,
               "ws: how long a dropped subscriber waits before it reconnects");
  app.add_flag("--expect-delivery", o.expect_delivery,
               "ws: every publication must reach every live subscriber once (no missing, no "
               "duplicate); otherwise exit status 3");
  app.add_option(
         "--dead-fraction", o.dead_fraction,
         "Fraction of connections that go silent after their first exchange (keep reading, never "
         "write again), like peers whose network vanished")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  add_duration(
      app, "--expect-idle-close", o.expect_idle_close,
      "The server's idle timeout: dead connections must be closed between T and T + slack after "
      "their last send (in --mode ws not sooner than T after the upgrade request: a WebSocket "
      "server's ping clock starts at the upgrade); live ones must not be closed. Violations set "
      "exit status 3");
  add_duration(app, "--idle-close-slack", o.idle_close_slack,
               "Tolerance after --expect-idle-close (the server's tick plus scheduling)");
  add_duration(app, "--tick", o.tick,
               "Tick of the harness's own timing wheel (send schedules, timeouts)");
  app.add_option("--json", o.json_path, "Write the merged result of all processes to this file");
  app.add_flag("-q,--quiet", o.quiet, "No live progress on stderr");
  app.add_flag(
      "--linger-reset", o.linger_reset,
      "Close connections at the end with RST (SO_LINGER 0), so no TIME_WAIT holds the ports");
  // A coordinator's, on each agent's share (not for people: hidden).
  app.add_flag("!--no-ws-publisher", o.ws_publisher)->group("");
  app.add_option("--clock-offset-ns", o.clock_offset_ns)->group("");

  // --auto-reconnect and its backoff (reconnect.h); ws mode's comeback after
  // a server restart (close 1012) waits the same backoff.
  app.add_flag("--auto-reconnect", o.reconnect.enabled,
               "Reopen every connection the server closes (and retry failed connects) after an "
               "exponential backoff with jitter; adds the `reconnect` block to the result");
  add_duration(app, "--reconnect-initial", o.reconnect.initial,
               "--auto-reconnect (and ws's comeback after a close 1012): the first delay (after a "
               "close, or a first failed connect)");
  add_duration(app, "--reconnect-max", o.reconnect.max,
               "--auto-reconnect (and ws's comeback after a close 1012): the delay stops growing "
               "here");
  add_duration(app, "--reconnect-stable", o.reconnect.stable,
               "--auto-reconnect: a connection closed sooner than this after it opened counts as a "
               "failed attempt (the backoff keeps growing); 0 = reset on every open");
  app.add_option("--reconnect-multiplier", o.reconnect.multiplier,
                 "--auto-reconnect (and ws's comeback after a close 1012): each consecutive failed "
                 "attempt multiplies the delay by this")
      ->capture_default_str();
  app.add_option("--reconnect-jitter", o.reconnect.jitter,
                 "--auto-reconnect (and ws's comeback after a close 1012): fraction of each delay "
                 "removed at random (0 lockstep, 1 full jitter)")
      ->capture_default_str();
}

std::uint64_t per_process_connection_limit() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  const std::uint64_t soft = r.rlim_cur == RLIM_INFINITY ? 1'000'000 : r.rlim_cur;
  return soft > 64 ? soft - 64 : 1;
}

void validate(const LoadOptions& o) {
  const std::uint64_t per_process = (o.connections + o.processes - 1) / o.processes;
  const std::uint64_t limit = per_process_connection_limit();
  if (per_process > limit)
    throw std::invalid_argument(std::to_string(o.connections) + " connections over " +
                                std::to_string(o.processes) + " processes is " +
                                std::to_string(per_process) +
                                " per process, above the open-file limit (" +
                                std::to_string(limit) + " usable): raise --processes to at least " +
                                std::to_string((o.connections + limit - 1) / limit));
  // ~28k ephemeral ports per (source, target) pair; warn-level facts are the
  // user's business, but a run that cannot possibly fit is an error.
  const std::uint64_t pairs = std::max<std::uint64_t>(1, o.source_ips.size()) * o.targets.size();
  if (o.connections > pairs * 60000)
    throw std::invalid_argument(
        "more connections than ports: add --source-ips addresses or targets");
  if (!o.source_ips.empty() && o.source_port_lo != 0) {
    const std::uint64_t ports = std::uint64_t{o.source_port_hi} - o.source_port_lo + 1;
    if ((o.connections + o.source_ips.size() - 1) / o.source_ips.size() > ports)
      throw std::invalid_argument(
          "more connections per source address than --source-ports has ports: add "
          "addresses to --source-ips or widen --source-ports");
  }
  if (o.mode == Mode::rpc && o.heartbeat.count() > 0 && o.heartbeat < o.tick)
    throw std::invalid_argument("--heartbeat must be at least --tick");
  if (o.tick < std::chrono::milliseconds(1))
    throw std::invalid_argument("--tick must be at least 1ms");
  if (o.duration <= std::chrono::nanoseconds{0})
    throw std::invalid_argument("--duration must be positive");
  o.reconnect.validate();
  if (!o.tls && (!o.tls_ca.empty() || o.tls_insecure || o.tls_resume || !o.tls_server_name.empty()))
    throw std::invalid_argument("--tls-ca, --tls-insecure, --tls-resume and --tls-server-name need --tls");
  if (o.tls_insecure && !o.tls_ca.empty())
    throw std::invalid_argument("give --tls-ca or --tls-insecure, not both");
  if (o.reconnect.enabled && o.mode == Mode::ws)
    throw std::invalid_argument(
        "--auto-reconnect is not for --mode ws (its --reconnect F drops and recovers subscribers)");
  if (o.mode == Mode::ws) {
    if (o.publish_rate > 0 && publish_stop_of(o) <= publish_start_of(o))
      throw std::invalid_argument(
          "ws: nothing would be published: --publish-start must come before --duration minus "
          "--publish-stop-before (lengthen --duration)");
    if (o.reconnect_fraction > 0 && reconnect_at_of(o) + o.reconnect_delay >= o.duration)
      throw std::invalid_argument(
          "ws: --reconnect-at + --reconnect-delay must come before --duration ends");
    if (o.ws_path.empty() || o.ws_path[0] != '/')
      throw std::invalid_argument("--ws-path must start with '/'");
  }
}

std::chrono::nanoseconds publish_start_of(const LoadOptions& o) {
  if (o.publish_start.count() >= 0) return o.publish_start;
  const double ramp_s = static_cast<double>(o.connections) / o.connect_rate + 1.0;
  return std::min(o.duration, std::chrono::nanoseconds(static_cast<std::int64_t>(ramp_s * 1e9)));
}

std::chrono::nanoseconds publish_stop_of(const LoadOptions& o) {
  return o.duration - o.publish_stop_before;
}

std::chrono::nanoseconds reconnect_at_of(const LoadOptions& o) {
  if (o.reconnect_at.count() >= 0) return o.reconnect_at;
  return (publish_start_of(o) + publish_stop_of(o)) / 2;
}

ProcessShare share_of(const LoadOptions& o, unsigned index) {
  ProcessShare s;
  s.index = index;
  s.count = o.processes;
  s.connections = o.connections / o.processes + (index < o.connections % o.processes ? 1 : 0);
  return s;
}

}  // namespace heartwheel::load
