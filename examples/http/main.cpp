// heartwheel-http: an HTTP/1.1 server on heartwheel (runtime::Workers + one
// http::Session per connection). See README.md in this folder.
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/common/error.h>
#include <heartwheel/http/net_handler.h>
#include <heartwheel/http/session_stats.h>
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/metrics/worker_board.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/runtime/serve.h>
#include <heartwheel/runtime/workers.h>
#include <heartwheel/tls/net_transport.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli_program.h"
#include "routes.h"
#include "server_flags.h"

namespace {

using heartwheel::Duration;
using heartwheel::cli::parse_duration_flag;
namespace http = heartwheel::http;
namespace metrics = heartwheel::metrics;
namespace net = heartwheel::net;
namespace runtime = heartwheel::runtime;

// Each worker publishes its HTTP counters here (from its own thread).
using StatsBoard = metrics::WorkerBoard<http::SessionStats>;

nlohmann::json to_json(const http::SessionStats& s) {
  // Close reasons spelled as everywhere else (net::to_string): one naming style.
  nlohmann::json closed = nlohmann::json::object();
  for (std::size_t i = 0; i < s.closed_by_reason.size(); ++i)
    if (s.closed_by_reason[i] != 0)
      closed[net::to_string(static_cast<net::CloseReason>(i))] = s.closed_by_reason[i];
  return {{"sessions", s.sessions},
          {"requests", s.requests},
          {"responses", {{"1xx", s.responses[1]}, {"2xx", s.responses[2]}, {"3xx", s.responses[3]},
                         {"4xx", s.responses[4]}, {"5xx", s.responses[5]}}},
          {"timeouts", {{"header", s.header_timeouts}, {"body", s.body_timeouts},
                        {"request", s.request_timeouts}, {"keepalive", s.keepalive_timeouts},
                        {"first_byte", s.first_byte_timeouts}, {"send", s.send_timeouts}}},
          {"parse_errors", s.parse_errors},
          {"header_too_large", s.header_too_large},
          {"body_too_large", s.body_too_large},
          {"handler_errors", s.handler_errors},
          {"invalid_responses", s.invalid_responses},
          {"answers_refused", s.answers_refused},
          {"backpressure_pauses", s.backpressure_pauses},
          {"pipeline_yields", s.pipeline_yields},
          {"closed_by_reason", closed}};
}

void write_stats(const std::string& path, const StatsBoard& board,
                 const runtime::Workers& workers) {
  if (path.empty()) return;
  nlohmann::json j;
  j["http"] = to_json(board.total());
  j["net"] = nlohmann::json::parse(net::to_json(workers.total()));
  heartwheel::cli::write_file_atomically(path, j.dump(2) + '\n');
}

struct Flags {
  std::string listen = "127.0.0.1:8080";
  unsigned workers = 1;
  std::string header_timeout = "10s", body_timeout = "10s", request_timeout = "30s",
              keepalive_timeout = "5s", send_timeout = "30s", drain_timeout = "10s", tick = "10ms",
              stats_interval = "1s";
  std::size_t max_header_bytes = 16 * 1024, max_body_bytes = 1024 * 1024, max_requests = 0;
  std::size_t pipeline_burst = http::SessionOptions{}.pipeline_burst;
  std::string pipeline_slice = "50us";
  std::size_t max_fired = heartwheel::LoopWheel::Options{}.max_fired_per_iteration;
  std::string stats_json;
  std::string metrics_listen;
  heartwheel::cli::ServerFlags server;
};

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "heartwheel-http: HTTP/1.1 server with wheel-driven timeouts.\n"
      "Routes: GET / (short text), POST /echo (echoes the body), GET /delay?ms=N "
      "(answers after N ms), GET /bytes?n=N (N bytes).\nDurations: 250ms, 2s, 5m; 0 turns a timeout off.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
      "heartwheel-http"};
  app.add_option("--listen", f.listen, "HOST:PORT to listen on (port 0: pick a free one)")
      ->capture_default_str();
  app.add_option("--workers", f.workers, "worker threads, each with its own loop and wheel "
                 "(SO_REUSEPORT)")->capture_default_str()->check(CLI::Range(1u, 64u));
  app.add_option("--header-timeout", f.header_timeout,
                 "first byte of a request to end of headers (408); also the wait for a new "
                 "connection's first byte (quiet close)")->capture_default_str();
  app.add_option("--body-timeout", f.body_timeout, "longest gap between body reads (408)")
      ->capture_default_str();
  app.add_option("--request-timeout", f.request_timeout,
                 "first byte to complete response (503, or 408 while the client still sends)")
      ->capture_default_str();
  app.add_option("--keepalive-timeout", f.keepalive_timeout,
                 "idle time between requests before a quiet close")->capture_default_str();
  app.add_option("--send-timeout", f.send_timeout,
                 "no write progress for this long: close")->capture_default_str();
  app.add_option("--drain-timeout", f.drain_timeout,
                 "on SIGTERM/SIGINT, how long in-flight requests may finish (a second signal "
                 "closes everything at once)")->capture_default_str();
  app.add_option("--max-header-bytes", f.max_header_bytes, "request line + headers limit (431; 414 if the target alone exceeds it)")
      ->capture_default_str();
  app.add_option("--max-body-bytes", f.max_body_bytes, "request body limit (413)")
      ->capture_default_str();
  app.add_option("--max-requests", f.max_requests,
                 "requests per connection, then Connection: close (0: unlimited)")
      ->capture_default_str();
  app.add_option("--pipeline-burst", f.pipeline_burst,
                 "pipelined requests answered from one read before the connection waits for "
                 "its next loop turn, so one client's pipeline cannot hold the others (>= 1)")
      ->capture_default_str();
  app.add_option("--pipeline-slice", f.pipeline_slice,
                 "or once answering them took this long (0: no time bound)")
      ->capture_default_str();
  app.add_option("--tick", f.tick, "timing wheel tick (>= 1ms)")->capture_default_str();
  app.add_option("--max-fired-per-iteration", f.max_fired,
                 "expiry budget: at most this many timer callbacks (timeouts, closes) per loop "
                 "turn; a mass expiry is spread over turns with I/O polled in between")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--stats-json", f.stats_json,
                 "write counters as JSON to FILE every --stats-interval and at exit");
  app.add_option("--stats-interval", f.stats_interval, "how often --stats-json is rewritten")
      ->capture_default_str();
  app.add_option("--metrics-listen", f.metrics_listen,
                 "HOST:PORT to serve GET /metrics on (Prometheus text format, every worker "
                 "merged; port 0: pick one, printed as 'metrics on HOST:PORT'); off when not "
                 "given");
  // --max-connections, --proxy-protocol, --max-connections-per-ip, --overload-*...
  heartwheel::cli::add_server_flags(app, f.server);
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  // Every value is checked before anything starts: a bad one is a usage error.
  http::SessionOptions so;
  runtime::WorkersOptions wo;
  net::HostPort hp;
  std::optional<metrics::EndpointOptions> metrics_options;
  Duration drain_timeout{}, stats_interval{};
  try {
    so.header_timeout = parse_duration_flag("--header-timeout", f.header_timeout);
    so.body_timeout = parse_duration_flag("--body-timeout", f.body_timeout);
    so.request_timeout = parse_duration_flag("--request-timeout", f.request_timeout);
    so.keepalive_timeout = parse_duration_flag("--keepalive-timeout", f.keepalive_timeout);
    so.send_timeout = parse_duration_flag("--send-timeout", f.send_timeout);
    so.max_header_bytes = f.max_header_bytes;
    so.max_body_bytes = f.max_body_bytes;
    so.max_requests_per_connection = f.max_requests;
    so.pipeline_burst = f.pipeline_burst;
    so.pipeline_slice = parse_duration_flag("--pipeline-slice", f.pipeline_slice);
    so.validate();
    wo.threads = f.workers;
    hp = net::parse_host_port(f.listen);
    wo.server.host = hp.host;
    wo.server.port = hp.port;
    wo.server.connection.idle = {};  // HTTP's own timeouts replace the idle policy
    // The send timeout is the connections' write-stall rule; set for the
    // server, so no connection needs a policy of its own (NetHandler::on_open).
    wo.server.connection.write.stall_timeout = so.send_timeout;
    // The keep-alive timeout is the idle timeout that --overload-* scales.
    heartwheel::cli::apply_server_flags(f.server, wo.server);
    wo.wheel.tick = parse_duration_flag("--tick", f.tick);
    wo.wheel.max_fired_per_iteration = f.max_fired;
    if (wo.wheel.tick < std::chrono::milliseconds(1))
      throw std::invalid_argument("--tick must be at least 1ms");
    wo.server.validate();
    drain_timeout = parse_duration_flag("--drain-timeout", f.drain_timeout);
    stats_interval = parse_duration_flag("--stats-interval", f.stats_interval);
    if (!f.metrics_listen.empty()) metrics_options = metrics::endpoint_at(f.metrics_listen);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  return heartwheel::cli::run(app, [&] {
    StatsBoard board(f.workers);
    // Each worker's HTTP counters reach the board when a session ends and
    // with every published snapshot, so a scrape sees requests on
    // connections that stay open.
    wo.on_publish = [&board](unsigned index, const net::LoopSnapshot&, net::Handler& h) {
      board.publish(index, static_cast<http::NetHandler&>(h).stats());
    };
    runtime::Workers workers(wo, [&](unsigned index) -> std::unique_ptr<net::Handler> {
      auto h = std::make_unique<http::NetHandler>(so, heartwheel_example::make_routes());
      h->set_publisher([&board, index](const http::SessionStats& s) { board.publish(index, s); });
      return h;
    });
    std::unique_ptr<metrics::Endpoint> endpoint;
    const heartwheel::cli::SighupReload reload(  // --tls-cert: certificates reloaded on SIGHUP
        heartwheel::tls::server_context(wo.server.transport.get()), "heartwheel-http");
    // Signals drain the workers (idle connections close, busy ones answer
    // with Connection: close); the stats file is rewritten meanwhile.
    runtime::serve(workers, {.program = "heartwheel-http",
                             .drain_timeout = drain_timeout,
                             .tick_interval = f.stats_json.empty() ? Duration{0} : stats_interval,
                             .tick = [&] { write_stats(f.stats_json, board, workers); },
                             .on_listening =
                                 [&](runtime::Workers&) {
                                   if (metrics_options) {
                                     endpoint = std::make_unique<metrics::Endpoint>(
                                         *metrics_options,
                                         [&workers, &board](metrics::TextWriter& out) {
                                           metrics::write(out, workers.total());
                                           metrics::write(out, board.total());
                                         });
                                   }
                                   heartwheel::cli::announce_listening(
                                       hp.host, workers.port(),
                                       endpoint ? endpoint->address() : std::string());
                                 }});
    write_stats(f.stats_json, board, workers);
    const auto t = board.total();
    std::fprintf(stderr, "heartwheel-http: stopped after %llu requests\n",
                 static_cast<unsigned long long>(t.requests));
    return 0;
  });
}
