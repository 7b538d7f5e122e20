// heartwheel-client-bench memory: what one idle client connection costs this
// process, as a net::Pool's connection (its heartbeat on, pinging with one
// byte an echo server returns) or as a plain net::Connector (options and
// statistics shared, as the load harness would). Opens --connections to
// one server, waits until all are open, lets them sit for a second, and
// prints the RSS before and after and the bytes per connection.
#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/connector.h>
#include <heartwheel/net/pool.h>
#include <heartwheel/timer/loop_wheel.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "cli_program.h"

namespace clientbench {

namespace net = heartwheel::net;

namespace {

// Reads and drops what comes back (the echoed pings).
struct Quiet final : net::Handler {
  void on_open(net::Connection&) override { ++open; }
  void on_data(net::Connection&, std::string_view) override {}
  void on_close(net::Connection&, net::CloseReason, std::error_code) override { --open; }
  std::size_t open = 0;
};

}  // namespace

int run_memory(int argc, char** argv) {
  std::string server, kind = "pool", heartbeat = "30s";
  std::size_t connections = 10000;
  CLI::App app{
      "heartwheel-client-bench memory: RSS per idle client connection, a pool's or a plain "
      "Connector's; prints one JSON object. Exit status: 0 ok, 1 runtime failure, 2 usage "
      "error.",
      "heartwheel-client-bench"};
  app.add_option("--server", server, "HOST:PORT of an echo server")->required();
  app.add_option("--kind", kind, "pool or connector")->capture_default_str();
  app.add_option("--connections", connections)->capture_default_str();
  app.add_option("--heartbeat", heartbeat, "the pool's heartbeat interval")->capture_default_str();
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  if (kind != "pool" && kind != "connector")
    return heartwheel::cli::usage_error(app, "--kind is pool or connector");

  uv_loop_t loop;
  heartwheel::check_uv(uv_loop_init(&loop), "uv_loop_init");
  nlohmann::json out;
  {
    heartwheel::LoopWheel wheel(&loop);
    Quiet handler;
    net::ConnectorOptions co;
    const net::HostPort hp = net::parse_host_port(server);
    co.host = hp.host;
    co.port = hp.port;
    co.connect_timeout = std::chrono::seconds(10);
    const long before = rss_kib();
    std::optional<net::Pool> pool;
    net::NetStats stats;
    std::vector<std::unique_ptr<net::Connector>> connectors;
    if (kind == "pool") {
      net::PoolOptions o;
      o.connector = co;
      o.connections_per_endpoint = connections;
      o.heartbeat.interval = heartwheel::cli::parse_duration_flag("--heartbeat", heartbeat);
      o.ping = [](net::Connection& c) { return !c.write("p"); };
      pool.emplace(wheel, handler, std::move(o));
      pool->set_endpoints(std::vector<std::string>{server});
      pool->start();
    } else {
      auto shared = std::make_shared<const net::ConnectorOptions>(co);
      connectors.reserve(connections);
      for (std::size_t i = 0; i < connections; ++i) {
        connectors.push_back(std::make_unique<net::Connector>(wheel, handler, shared, &stats));
        connectors.back()->start();
      }
    }
    const TimePoint by = hr_now() + std::chrono::seconds(60);
    while (handler.open < connections && hr_now() < by) uv_run(&loop, UV_RUN_ONCE);
    const TimePoint idle_until = hr_now() + std::chrono::seconds(1);
    while (hr_now() < idle_until) uv_run(&loop, UV_RUN_NOWAIT);
    const long after = rss_kib();
    out = {{"kind", kind},
           {"connections", connections},
           {"open", handler.open},
           {"rss_before_kib", before},
           {"rss_after_kib", after},
           {"bytes_per_connection",
            static_cast<double>(after - before) * 1024 / static_cast<double>(connections)}};
    if (pool) pool->stop();
    for (auto& c : connectors) c->stop();
    while (handler.open > 0) uv_run(&loop, UV_RUN_ONCE);
    pool.reset();
    connectors.clear();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace clientbench
