// heartwheel-echo: a TCP echo server with per-connection idle timeouts in the
// loop's timing wheel, every flag of it: the scale-run target (--timers uv
// gives the one-uv_timer_t-per-connection baseline) and the integration
// tests' server. The echo server to copy is examples/echo. See README.md.
#include <heartwheel/common/error.h>
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/metrics/shared_slots.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/restart.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/runtime/prefork.h>
#include <heartwheel/runtime/serve.h>
#include <heartwheel/runtime/workers.h>
#include <heartwheel/tls/net_transport.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "cli_program.h"
#include "health.h"
#include "server_flags.h"
#include "uv_idle_baseline.h"

namespace metrics = heartwheel::metrics;
namespace net = heartwheel::net;
namespace runtime = heartwheel::runtime;
using heartwheel::Duration;
using namespace std::chrono_literals;

namespace {

// With --proxy-protocol the connection reaches it only once its PROXY header
// came, so it echoes what follows the header.
class EchoHandler final : public net::Handler {
 public:
  void on_data(net::Connection& conn, std::string_view data) override { conn.write(data); }
};

struct Config {
  std::string listen = "127.0.0.1:0";
  std::string read_idle = "0", write_idle = "0", all_idle = "0", max_age = "0", jitter = "0";
  std::string tick = "10ms", drain_timeout = "5s", stats_interval = "0", write_stall = "30s";
  std::string timers = "wheel", refresh = "lazy";
  unsigned workers = 1, processes = 1;
  heartwheel::cli::ServerFlags server;
  std::size_t max_fired = heartwheel::LoopWheel::Options{}.max_fired_per_iteration;
  int backlog = 4096;
  std::size_t high_watermark = std::size_t{1} << 20;
  std::string stats_json;
  std::string metrics_listen;
};

struct Setup {
  runtime::WorkersOptions workers;
  Duration drain_timeout{};
  Duration stats_interval{};
  std::optional<metrics::EndpointOptions> metrics;  // --metrics-listen
  // --timers uv: one uv_timer_t per connection (tools/bench-common) keeps
  // the idle timeouts; net's own are off.
  std::shared_ptr<heartwheel::bench::UvIdleBaseline> uv_baseline;
  std::shared_ptr<heartwheel::tls::Context> tls;  // --tls-cert: reloaded on SIGHUP
};

Setup make_setup(const Config& c) {
  using heartwheel::cli::parse_duration_flag;
  Setup s;
  const auto hp = net::parse_host_port(c.listen);
  auto& so = s.workers.server;
  so.host = hp.host;
  so.port = hp.port;
  heartwheel::cli::apply_server_flags(c.server, so);
  s.tls = heartwheel::tls::server_context(so.transport.get());
  so.backlog = c.backlog;
  auto& co = so.connection;
  co.idle.read_idle = parse_duration_flag("--read-idle", c.read_idle);
  co.idle.write_idle = parse_duration_flag("--write-idle", c.write_idle);
  co.idle.all_idle = parse_duration_flag("--all-idle", c.all_idle);
  co.idle.max_age = parse_duration_flag("--max-age", c.max_age);
  co.idle.jitter = parse_duration_flag("--jitter", c.jitter);
  co.idle.refresh = c.refresh == "eager" ? net::RefreshMode::eager : net::RefreshMode::lazy;
  if (c.timers == "uv") {
    s.uv_baseline = std::make_shared<heartwheel::bench::UvIdleBaseline>(co.idle, c.workers);
    co.idle = s.uv_baseline->net_policy();
  }
  co.write.high_watermark = c.high_watermark;
  co.write.low_watermark = c.high_watermark / 4;
  co.write.max_queued_bytes = std::max(co.write.max_queued_bytes, c.high_watermark);
  co.write.stall_timeout = parse_duration_flag("--write-stall", c.write_stall);
  s.workers.threads = c.workers;
  s.workers.wheel.tick = parse_duration_flag("--tick", c.tick);
  if (s.workers.wheel.tick < 1ms) throw std::invalid_argument("--tick must be at least 1ms");
  s.workers.wheel.max_fired_per_iteration = c.max_fired;
  s.drain_timeout = parse_duration_flag("--drain-timeout", c.drain_timeout);
  s.stats_interval = parse_duration_flag("--stats-interval", c.stats_interval);
  // Workers publish their counters for the periodic line; keep that lag small.
  if (s.stats_interval.count() > 0)
    s.workers.publish_interval =
        std::min(s.workers.publish_interval, std::max<Duration>(s.stats_interval / 2, 1ms));
  if (c.processes > 1) so.reuse_port = true;
  so.validate();
  if (!c.metrics_listen.empty()) {
    s.metrics = metrics::endpoint_at(c.metrics_listen);
    s.metrics->reuse_port = c.processes > 1;  // every process serves the port
  }
  return s;
}

// How this process serves metrics. One process: a scrape reads the workers'
// published snapshots. Pre-forked: every worker of every process also stores
// its snapshot in its slot of memory shared by all processes, and each
// process's endpoint (all on one SO_REUSEPORT port) answers with the merge
// of every slot, whichever process the scrape reaches.
struct MetricsPlan {
  metrics::SharedSlots<net::LoopSnapshot>* slots = nullptr;  // pre-forked only
  std::size_t first_slot = 0;                                // this process's first
  // A child of --processes: no restart on SIGUSR2 (the successor would be a
  // whole new pre-forked tree beside the parent's; see README.md).
  bool prefork_child = false;
};

net::LoopSnapshot merge_slots(const metrics::SharedSlots<net::LoopSnapshot>& slots) {
  net::LoopSnapshot total;
  total.loops = 0;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (auto s = slots.load(i)) total.merge(*s);
  return total;
}

// The workers' counters, with the uv baseline's own (--timers uv).
net::LoopSnapshot total_of(const runtime::Workers& workers, const Setup& setup) {
  net::LoopSnapshot total = workers.total();
  return setup.uv_baseline ? setup.uv_baseline->add_to(total) : total;
}

// Runs the workers of this process until a signal drained them (runtime::serve).
// Calls `on_ready(port, endpoint)` once every worker listens (endpoint: the
// metrics endpoint, or null without --metrics-listen). Returns the final
// statistics.
net::LoopSnapshot serve(const Setup& setup, const MetricsPlan& plan,
                        const std::function<void(int, const metrics::Endpoint*)>& on_ready) {
  runtime::WorkersOptions options = setup.workers;
  auto* uv = setup.uv_baseline.get();
  if (plan.slots || uv) {
    options.on_publish = [&plan, uv](unsigned worker, const net::LoopSnapshot& s, net::Handler& h) {
      if (uv) uv->publish(worker, h);
      if (plan.slots)
        plan.slots->store(plan.first_slot + worker, uv ? uv->add_to(s, static_cast<int>(worker)) : s);
    };
  }
  runtime::Workers workers(options, [uv](unsigned) -> std::unique_ptr<net::Handler> {
    auto echo = std::make_unique<EchoHandler>();
    if (uv) return uv->wrap(std::move(echo));
    return echo;
  });
  // runtime::serve waits for the signals on this thread (its watchers exist
  // before any worker accepts), drains on the first, stops on a second, and
  // prints the statistics line every --stats-interval meanwhile. It says
  // nothing about the signals: this program's stderr carries only those lines.
  std::unique_ptr<metrics::Endpoint> endpoint;
  runtime::ServeOptions serving{
      .drain_timeout = setup.drain_timeout,
      .tick_interval = setup.stats_interval,
      .tick =
          [&workers, &setup] {
            std::fprintf(stderr, "%s\n", net::to_json(total_of(workers, setup)).c_str());
          },
      .on_listening =
          [&](runtime::Workers& w) {
            if (setup.metrics) {
              metrics::EndpointOptions o = *setup.metrics;
              o.ready = heartwheel::cli::readiness();  // /readyz: not draining
              endpoint = std::make_unique<metrics::Endpoint>(
                  std::move(o), [&w, &plan, &setup](metrics::TextWriter& out) {
                    metrics::write(out, plan.slots ? merge_slots(*plan.slots) : total_of(w, setup));
                  });
            }
            on_ready(w.port(), endpoint.get());
          },
      .log = [](std::string_view) {},  // stderr carries only the stats lines
      // kill -USR2 (single process): the metrics listener goes to the successor too.
      .restart = {.on_sigusr2 = !plan.prefork_child,
                  .metrics_fd = [&] { return endpoint ? endpoint->listen_fd() : -1; },
                  .on_handover = [&] { endpoint.reset(); }}};
  runtime::serve(workers, serving);
  endpoint.reset();
  return total_of(workers, setup);
}

// Binds (without listening) a SO_REUSEPORT socket on host:port in the
// parent: it keeps the port reserved (port 0: picks one) so every child can
// listen on it. Returns the descriptor and the bound port.
std::pair<int, int> reserve_port(const std::string& host, int port, const std::string& flag) {
  sockaddr_storage ss;
  if (auto ec = net::to_sockaddr({host, port}, ss)) throw std::system_error(ec, "address");
  std::error_code ec;
  const int fd = net::open_reuseport_socket(reinterpret_cast<sockaddr*>(&ss), ec);
  if (fd < 0) throw std::system_error(ec, "bind " + flag + " " + host + ":" + std::to_string(port));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return {fd, net::port_of(reinterpret_cast<sockaddr*>(&bound))};
}

// Throws std::runtime_error if the file cannot be written (a runtime failure).
void write_stats(const Config& c, const net::LoopSnapshot& total, unsigned processes,
                 unsigned restarts = 0) {
  if (c.stats_json.empty()) return;
  auto j = nlohmann::json::parse(net::to_json(total));
  j["processes"] = processes;
  j["process_restarts"] = restarts;
  j["workers_per_process"] = c.workers;
  j["timers"] = c.timers;
  j["refresh"] = c.refresh;
  std::ofstream out(c.stats_json);
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write --stats-json " + c.stats_json);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "heartwheel-echo: TCP echo server whose connections close when idle.\n"
      "Durations: 250ms, 2s, 1.5s, 5m, 1h; 0 = off. Exit status: 0 ok, 1 runtime failure, 2 usage "
      "error.",
      "heartwheel-echo"};
  app.add_option("--listen", c.listen,
                 "HOST:PORT to listen on (port 0 = pick one; the real one is "
                 "printed as 'listening on HOST:PORT')")
      ->capture_default_str();
  app.add_option("--read-idle", c.read_idle, "close a connection after this long with nothing read")
      ->capture_default_str();
  app.add_option("--write-idle", c.write_idle, "close after this long with nothing written")
      ->capture_default_str();
  app.add_option("--all-idle", c.all_idle, "close after this long with nothing read or written")
      ->capture_default_str();
  app.add_option("--max-age", c.max_age, "close every connection this long after it opened")
      ->capture_default_str();
  app.add_option("--jitter", c.jitter,
                 "push each connection's first idle deadline back by a random "
                 "0..jitter (spreads connections opened together)")
      ->capture_default_str();
  app.add_option("--tick", c.tick, "timing wheel resolution (>= 1ms)")->capture_default_str();
  app.add_option("--max-fired-per-iteration", c.max_fired,
                 "expiry budget: at most this many timer "
                 "callbacks per loop iteration (mass expiry is spread)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--timers", c.timers,
                 "idle tracking: 'wheel' (one shared timing wheel per loop) or "
                 "'uv' (one uv_timer_t per connection, the baseline)")
      ->check(CLI::IsMember({"wheel", "uv"}))
      ->capture_default_str();
  app.add_option("--refresh", c.refresh,
                 "refresh on I/O: 'lazy' (timestamp, re-arm on fire) or "
                 "'eager' (reschedule on every read/write)")
      ->check(CLI::IsMember({"lazy", "eager"}))
      ->capture_default_str();
  app.add_option("--workers", c.workers,
                 "event-loop threads per process, each with its own wheel "
                 "and SO_REUSEPORT listener")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  app.add_option("--processes", c.processes,
                 "pre-forked processes sharing the port (for low "
                 "per-process descriptor limits); with --tls-cert the parent passes "
                 "SIGHUP on to every process")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  // --max-connections, --proxy-protocol, --max-connections-per-ip, --overload-*...
  heartwheel::cli::add_server_flags(app, c.server);
  app.add_option("--backlog", c.backlog,
                 "listen backlog (the kernel caps it at net.core.somaxconn)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--high-watermark", c.high_watermark,
                 "bytes queued for a slow reader before reading "
                 "from it pauses")
      ->capture_default_str();
  app.add_option("--write-stall", c.write_stall,
                 "close a connection whose queued bytes made no progress "
                 "for this long (reason write_stall); 0 = off")
      ->capture_default_str();
  app.add_option("--drain-timeout", c.drain_timeout,
                 "on SIGTERM/SIGINT: stop accepting, wait this long "
                 "for connections to finish, then close them (reason drain)")
      ->capture_default_str();
  app.add_option("--stats-json", c.stats_json,
                 "write final statistics as JSON to this file at exit");
  app.add_option("--stats-interval", c.stats_interval,
                 "print a one-line statistics JSON to stderr this "
                 "often; 0 = never")
      ->capture_default_str();
  app.add_option("--metrics-listen", c.metrics_listen,
                 "HOST:PORT to serve GET /metrics on (Prometheus text format, "
                 "every worker and process merged; port 0 = pick one, printed as "
                 "'metrics on HOST:PORT'); off when not given");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  Setup setup;
  try {
    setup = make_setup(c);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }
  const std::string host = setup.workers.server.host;
  return heartwheel::cli::run(app, [&] {
    if (c.processes <= 1) {
      const heartwheel::cli::SighupReload reload(setup.tls, "heartwheel-echo");
      const auto total = serve(setup, {}, [&](int port, const metrics::Endpoint* endpoint) {
        heartwheel::cli::write_pid_file();
        runtime::announce("listening", host, port);
        if (endpoint) runtime::announce("metrics", setup.metrics->host, endpoint->port());
      });
      write_stats(c, total, 1);
      return 0;
    }
    // Reserve the ports in the parent (bound, not listening: they receive no
    // connections) so every child can join them with SO_REUSEPORT.
    const auto reserved = reserve_port(host, setup.workers.server.port, "--listen");
    const int reserve_fd = reserved.first, port = reserved.second;
    setup.workers.server.port = port;
    int metrics_fd = -1;
    std::optional<metrics::SharedSlots<net::LoopSnapshot>> slots;  // before fork: shared
    if (setup.metrics) {
      std::tie(metrics_fd, setup.metrics->port) =
          reserve_port(setup.metrics->host, setup.metrics->port, "--metrics-listen");
      slots.emplace(std::size_t{c.processes} * c.workers);
    }
    auto result = runtime::run_prefork(
        c.processes,
        [&](runtime::PreforkChild& child) {
          ::close(reserve_fd);
          if (metrics_fd >= 0) ::close(metrics_fd);
          const heartwheel::cli::SighupReload reload(setup.tls, "heartwheel-echo");
          MetricsPlan plan;
          plan.prefork_child = true;
          if (slots) {
            plan.slots = &*slots;
            plan.first_slot = std::size_t{child.index()} * c.workers;
          }
          const auto total =
              serve(setup, plan, [&](int, const metrics::Endpoint*) { child.ready(); });
          child.report(std::string_view(reinterpret_cast<const char*>(&total), sizeof total));
          return 0;
        },
        [&] {
          heartwheel::cli::write_pid_file();
          heartwheel::net::restart::announce_ready();  // systemd: the parent is the main process
          runtime::announce("listening", host, port);
          if (setup.metrics) runtime::announce("metrics", setup.metrics->host, setup.metrics->port);
        },
        runtime::kPreforkMaxRestarts,
        // With TLS the parent passes SIGHUP on: every child reloads its
        // certificates (each has its SighupReload up before it says ready).
        setup.tls != nullptr);
    ::close(reserve_fd);
    if (metrics_fd >= 0) ::close(metrics_fd);
    net::LoopSnapshot total;
    total.loops = 0;
    for (const auto& r : result.reports) {
      if (r.size() != sizeof(net::LoopSnapshot)) continue;
      net::LoopSnapshot s;
      std::memcpy(&s, r.data(), sizeof s);
      total.merge(s);
    }
    write_stats(c, total, c.processes, result.restarts);
    return result.exit_code;
  });
}
