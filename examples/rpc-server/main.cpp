// heartwheel-rpc-server: answers the RPC frame protocol (docs/rpc-protocol.md)
// with heartbeats both ways, optional reply delays on the timing wheel, and a
// graceful drain on SIGTERM/SIGINT. See README.md in this folder.
#include <heartwheel/common/error.h>
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/metrics/worker_board.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/runtime/serve.h>
#include <heartwheel/runtime/workers.h>
#include <heartwheel/tls/net_transport.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_program.h"
#include "rpc_service.h"
#include "server_flags.h"

namespace metrics = heartwheel::metrics;
namespace net = heartwheel::net;
namespace runtime = heartwheel::runtime;
using heartwheel::Duration;
using heartwheel::cli::parse_duration_flag;

namespace {

struct Config {
  std::string listen = "127.0.0.1:0";
  std::string heartbeat = "30s", heartbeat_timeout = "0", reply_delay = "0";
  std::string tick = "10ms", drain_timeout = "5s", read_idle = "0";
  std::size_t max_frame = heartwheel::rpc::kDefaultMaxFrameLength;
  unsigned workers = 1;
  std::string stats_json;
  std::string metrics_listen;
  heartwheel::cli::ServerFlags server;
};

struct Setup {
  runtime::WorkersOptions workers;
  rpcserver::ServiceOptions service;
  Duration drain_timeout{};
  std::optional<metrics::EndpointOptions> metrics;  // --metrics-listen
};

Setup make_setup(const Config& c) {
  Setup s;
  const auto hp = net::parse_host_port(c.listen);
  s.workers.server.host = hp.host;
  s.workers.server.port = hp.port;
  s.workers.threads = c.workers;
  s.workers.wheel.tick = parse_duration_flag("--tick", c.tick);
  if (s.workers.wheel.tick < std::chrono::milliseconds(1))
    throw std::invalid_argument("--tick must be at least 1ms");
  s.service.reply_delay = parse_duration_flag("--reply-delay", c.reply_delay);
  s.service.max_frame_length = c.max_frame;
  s.service.heartbeat.interval = parse_duration_flag("--heartbeat", c.heartbeat);
  s.service.heartbeat.timeout = parse_duration_flag("--heartbeat-timeout", c.heartbeat_timeout);
  if (s.service.heartbeat.interval.count() == 0 && s.service.heartbeat.timeout.count() > 0)
    throw std::invalid_argument("--heartbeat-timeout needs --heartbeat (the interval) to be on");
  rpcserver::WorkerCounters probe;
  rpcserver::handler_options(s.service, probe);  // validates heartbeat and --max-frame
  s.drain_timeout = parse_duration_flag("--drain-timeout", c.drain_timeout);
  s.workers.server.connection.idle.read_idle = parse_duration_flag("--read-idle", c.read_idle);
  heartwheel::cli::apply_server_flags(c.server, s.workers.server);
  s.workers.server.validate();
  if (!c.metrics_listen.empty()) s.metrics = metrics::endpoint_at(c.metrics_listen);
  return s;
}

nlohmann::json counters_json(const rpcserver::WorkerCounters& c) {
  const heartwheel::rpc::NetHandlerStats& r = c.rpc;
  return {{"requests", r.requests},
          {"responses", r.responses},
          {"errors_sent", r.errors_sent},
          {"refused_draining", r.refused_draining},
          {"delayed", c.delayed},
          {"dropped_replies", r.dropped_replies},
          {"pings_received", r.pings_received},
          {"pings_sent", r.pings_sent},
          {"pongs_received", r.pongs_received},
          {"pong_timeouts", r.pong_timeouts},
          {"unexpected_frames", r.unexpected_frames},
          {"protocol_errors", r.protocol_errors},
          {"frames_too_large", r.frames_too_large},
          {"frames_sent", r.frames_sent},
          {"writes", r.writes}};
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "heartwheel-rpc-server: answers RPC frames (REQUEST -> RESPONSE echoing the payload, "
      "PING -> PONG), pings idle peers and closes silent ones.\n"
      "Durations: 250ms, 2s, 1.5s, 5m; 0 = off. Exit status: 0 ok, 1 runtime failure, 2 "
      "usage error.",
      "heartwheel-rpc-server"};
  app.add_option("--listen", c.listen, "HOST:PORT to listen on (port 0 = pick one; printed as "
                                       "'listening on HOST:PORT')")->capture_default_str();
  app.add_option("--heartbeat", c.heartbeat,
                 "heartbeat interval: send a PING after this long with "
                 "nothing read or nothing written; 0 = no heartbeats "
                 "and no pong_timeout close")
      ->capture_default_str();
  app.add_option("--heartbeat-timeout", c.heartbeat_timeout,
                 "close a peer (pong_timeout) that sent "
                 "nothing for this long while a PING was "
                 "out (0 = 3 x --heartbeat; at least 2 x)")
      ->capture_default_str();
  app.add_option("--reply-delay", c.reply_delay, "answer each REQUEST this long after it arrived "
                                                 "(scheduled on the timing wheel), to show client timeouts")
      ->capture_default_str();
  app.add_option("--max-frame", c.max_frame, "largest frame length accepted (type + id + payload); "
                                             "a larger one closes that connection")->capture_default_str();
  app.add_option("--workers", c.workers, "event-loop threads, each with its own wheel and SO_REUSEPORT "
                                         "listener")->check(CLI::Range(1u, 256u))->capture_default_str();
  app.add_option("--tick", c.tick, "timing wheel resolution (>= 1ms)")->capture_default_str();
  app.add_option("--drain-timeout", c.drain_timeout, "on SIGTERM/SIGINT: stop accepting, finish "
                                                     "in-flight (delayed) calls for up to this long, then close")
      ->capture_default_str();
  app.add_option("--read-idle", c.read_idle,
                 "close a connection that sent nothing for this long (read_idle), heartbeats "
                 "or not; the idle timeout --overload-* scales; 0 = off")
      ->capture_default_str();
  app.add_option("--stats-json", c.stats_json, "write final statistics as JSON to this file at exit");
  app.add_option("--metrics-listen", c.metrics_listen,
                 "HOST:PORT to serve GET /metrics on (Prometheus text format, every worker "
                 "merged; port 0 = pick one, printed as 'metrics on HOST:PORT'); off when not "
                 "given");
  // --max-connections, --proxy-protocol, --max-connections-per-ip, --overload-*...
  heartwheel::cli::add_server_flags(app, c.server);
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  Setup setup;
  try {
    setup = make_setup(c);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }
  std::vector<rpcserver::WorkerCounters> counters(c.workers);
  // Live copies of each worker's RPC counters, for scrapes (the final ones
  // are in `counters` after the join).
  metrics::WorkerBoard<heartwheel::rpc::NetHandlerStats> board(c.workers);
  setup.workers.on_publish = [&board](unsigned index, const net::LoopSnapshot&, net::Handler& h) {
    board.publish(index, static_cast<heartwheel::rpc::NetHandler&>(h).stats());
  };
  return heartwheel::cli::run(app, [&] {
    runtime::Workers workers(setup.workers, [&](unsigned index) -> std::unique_ptr<net::Handler> {
      return rpcserver::make_service(setup.service, counters[index]);
    });
    std::unique_ptr<metrics::Endpoint> endpoint;
    const heartwheel::cli::SighupReload reload(  // --tls-cert: certificates reloaded on SIGHUP
        heartwheel::tls::server_context(setup.workers.server.transport.get()),
        "heartwheel-rpc-server");
    // The first SIGTERM/SIGINT drains (each worker's server calls the
    // handler's on_drain for every connection), a second one stops; the
    // watchers exist before the workers start, so a signal sent as soon as
    // "listening on" is printed already drains. Nothing is said about the
    // signals: this program's stderr stays as it was.
    runtime::serve(workers, {.drain_timeout = setup.drain_timeout,
                             .on_listening =
                                 [&](runtime::Workers&) {
                                   if (setup.metrics) {
                                     endpoint = std::make_unique<metrics::Endpoint>(
                                         *setup.metrics,
                                         [&workers, &board](metrics::TextWriter& out) {
                                           metrics::write(out, workers.total());
                                           metrics::write(out, board.total());
                                         });
                                   }
                                   heartwheel::cli::announce_listening(
                                       setup.workers.server.host, workers.port(),
                                       endpoint ? endpoint->address() : std::string());
                                 },
                             .log = [](std::string_view) {}});
    // The workers are joined: the counters are ours to read.

    rpcserver::WorkerCounters total;
    for (const auto& w : counters) total.merge(w);
    if (!c.stats_json.empty()) {
      auto j = nlohmann::json::parse(net::to_json(workers.total()));
      j["rpc"] = counters_json(total);
      j["workers"] = c.workers;
      std::ofstream out(c.stats_json);
      out << j.dump(2) << "\n";
      if (!out) return heartwheel::cli::failure(app, "cannot write --stats-json " + c.stats_json);
    }
    return 0;
  });
}
