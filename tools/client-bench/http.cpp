// heartwheel-client-bench http: http::Client in a closed loop against one
// server: --concurrency requests in flight over --connections keep-alive
// connections, each answer followed at once by the next request, for
// --duration. Prints requests/s, this process's CPU time per request, and
// the round trips' p50 and p99 (what wrk prints for the same server; the
// driver run.py measures wrk in the same run).
#include <heartwheel/common/error.h>
#include <heartwheel/http/client.h>
#include <heartwheel/timer/loop_wheel.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "cli_program.h"

namespace clientbench {

namespace http = heartwheel::http;

int run_http(int argc, char** argv) {
  std::string server, target = "/hello", duration = "5s";
  std::size_t connections = 16, concurrency = 16;
  CLI::App app{
      "heartwheel-client-bench http: http::Client in a closed loop against one server; prints "
      "one JSON object. Exit status: 0 ok, 1 runtime failure, 2 usage error.",
      "heartwheel-client-bench"};
  app.add_option("--server", server, "HOST:PORT")->required();
  app.add_option("--target", target)->capture_default_str();
  app.add_option("--connections", connections)->capture_default_str();
  app.add_option("--concurrency", concurrency, "requests in flight")->capture_default_str();
  app.add_option("--duration", duration)->capture_default_str();
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  Duration run_for{};
  try {
    run_for = heartwheel::cli::parse_duration_flag("--duration", duration);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  uv_loop_t loop;
  heartwheel::check_uv(uv_loop_init(&loop), "uv_loop_init");
  nlohmann::json out;
  {
    heartwheel::LoopWheel wheel(&loop);
    http::ClientOptions o;
    o.servers = {server};
    o.pool.connections_per_endpoint = connections;
    o.max_in_flight = concurrency;
    std::optional<http::Client> client;
    client.emplace(wheel, o);
    client->start();
    const TimePoint warm_by = hr_now() + std::chrono::seconds(10);
    while (client->pool().open_connections() < connections && hr_now() < warm_by)
      uv_run(&loop, UV_RUN_ONCE);

    std::uint64_t done = 0, errors = 0;
    std::vector<std::int64_t> rtt_us;
    rtt_us.reserve(1 << 20);
    bool running = true;
    std::function<void()> issue;
    issue = [&] {
      const TimePoint sent = hr_now();
      client->get(target, [&, sent](std::error_code ec, http::ClientResponse& r) {
        if (ec || r.status != 200) {
          ++errors;
        } else {
          ++done;
          if (rtt_us.size() < rtt_us.capacity()) rtt_us.push_back((hr_now() - sent).count() / 1000);
        }
        if (running) issue();
      });
    };
    const double cpu0 = cpu_seconds();
    const TimePoint t0 = hr_now();
    for (std::size_t i = 0; i < concurrency; ++i) issue();
    while (hr_now() < t0 + run_for) uv_run(&loop, UV_RUN_ONCE);
    running = false;
    const double secs = std::chrono::duration<double>(hr_now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    while (client->in_flight() > 0) uv_run(&loop, UV_RUN_ONCE);
    out = {{"client", "http::Client"},
           {"connections", connections},
           {"concurrency", concurrency},
           {"requests", done},
           {"errors", errors},
           {"seconds", secs},
           {"requests_per_s", static_cast<double>(done) / secs},
           {"cpu_s", cpu},
           {"cpu_us_per_request", done ? cpu * 1e6 / static_cast<double>(done) : 0},
           {"reused", client->stats().reused},
           {"connects", client->pool().totals().connects},
           {"p50_us", quantile(rtt_us, 0.5)},
           {"p99_us", quantile(rtt_us, 0.99)}};
    client->stop();
    while (client->pool().open_connections() > 0) uv_run(&loop, UV_RUN_ONCE);
    client.reset();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace clientbench
