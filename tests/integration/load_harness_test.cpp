// heartwheel-load end to end against a small in-test server (echo or RPC
// frames) that closes connections idle for its read-idle time: the JSON
// report must show every connection established, every dead one closed about
// one idle timeout after its last send, and no live one closed.
// HEARTWHEEL_LOAD_BIN comes from the build.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "closed_port.h"
#include "mini_echo_server.h"
#include "process_support.h"

using namespace std::chrono_literals;
using heartwheel::test::ClosedPort;
using heartwheel::test::MiniEchoServer;

namespace {

struct Run {
  int status = -1;
  nlohmann::json report;
  std::string summary;  // what it printed on stdout
};

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Runs the harness with `args` (space-separated) plus --quiet --json, waits
// at most 60 s, and returns its exit status and report. `env` adds
// NAME=VALUE entries (the harness's test hooks).
Run run_load(const std::string& args, std::vector<std::string> env = {}) {
  static int serial = 0;
  const std::string out = "/tmp/heartwheel-load-test-" + std::to_string(::getpid()) + "-" +
                          std::to_string(++serial) + ".json";
  auto argv = words(args);
  argv.insert(argv.begin(), HEARTWHEEL_LOAD_BIN);
  for (const char* a : {"--quiet", "--json"}) argv.push_back(a);
  argv.push_back(out);
  hwproc::Child load(argv, {.capture_stderr = false, .env = std::move(env)});
  const auto status = load.wait_exit(60s);
  REQUIRE(status.has_value());
  std::ifstream in(out);
  REQUIRE(in.good());
  Run run{*status, nlohmann::json::parse(in), load.output()};
  std::remove(out.c_str());
  return run;
}

std::string target(const MiniEchoServer& server) {
  return " --target 127.0.0.1:" + std::to_string(server.port()) + " ";
}

std::uint64_t u(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

}  // namespace

TEST_CASE("The harness sees dead connections closed at the idle timeout and no live one closed",
          "[integration][load]") {
  MiniEchoServer server(1s);
  const Run run = run_load(target(server) +
                           "--connections 300 --processes 2 --source-ips 127.0.0.1-127.0.0.2 "
                           "--message-interval 200ms --dead-fraction 0.2 --expect-idle-close 1s "
                           "--idle-close-slack 1500ms --duration 4s");
  const auto& r = run.report;
  INFO(r.dump(2).substr(0, 3000));
  CHECK(run.status == 0);
  CHECK(r["connections_established"] == 300);
  CHECK(r["connect_errors"].empty());
  CHECK(r["workers_failed"] == 0);
  CHECK(r["dead"]["count"] == 60);
  CHECK(r["dead"]["closed"] == 60);
  CHECK(u(r["dead"]["close_after_ms"]["min"]) >= 950);
  CHECK(u(r["dead"]["close_after_ms"]["max"]) <= 2500);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(r["expectations_met"] == true);
  CHECK(u(r["messages_received"]) > 240 * 10);
  CHECK(u(r["rtt_us"]["p50"]) > 0);
  CHECK(u(r["rtt_us"]["max"]) >= u(r["rtt_us"]["p99"]));
  CHECK(r["processes"] == 2);
  CHECK(server.accepted() == 300);
  CHECK(server.idle_closed() == 60);
}

TEST_CASE("In rpc mode requests get responses, heartbeats get PONGs and dead peers answer nothing",
          "[integration][load][rpc]") {
  MiniEchoServer server(1s, MiniEchoServer::Protocol::rpc);
  const Run run =
      run_load("--mode rpc" + target(server) +
               "--connections 100 --processes 2 --message-interval 400ms --heartbeat 150ms "
               "--dead-fraction 0.1 --expect-idle-close 1s --idle-close-slack 1500ms "
               "--duration 3s");
  const auto& r = run.report;
  INFO(r.dump(2).substr(0, 3000));
  CHECK(run.status == 0);
  CHECK(r["connections_established"] == 100);
  CHECK(r["errors"].empty());
  CHECK(r["rpc_errors"] == 0);
  // Every request but those in flight at the end got its RESPONSE.
  CHECK(u(r["messages_received"]) + 100 >= u(r["messages_sent"]));
  CHECK(u(r["messages_received"]) > 90 * 5);
  // Between requests 400 ms apart, a 150 ms heartbeat sends two PINGs.
  CHECK(u(r["pings_sent"]) > 90 * 8);
  CHECK(u(r["pongs_received"]) + 100 >= u(r["pings_sent"]));
  CHECK(r["heartbeat_rtt_us"]["count"] == r["pongs_received"]);
  // The server PINGs after each RESPONSE: live connections answer, dead ones do not.
  CHECK(u(r["pings_answered"]) > 0);
  CHECK(u(r["pings_answered"]) <= u(r["messages_received"]));
  CHECK(r["dead"]["count"] == 10);
  CHECK(r["dead"]["closed"] == 10);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(server.bad_frames() == 0);
  CHECK(server.pongs_received() == u(r["pings_answered"]));
}

TEST_CASE("Messages of 16 bytes (the stamps alone) and of odd sizes are counted exactly",
          "[integration][load]") {
  MiniEchoServer server(30s);
  for (const char* size : {"16", "1000"}) {
    const Run run =
        run_load(target(server) + "--connections 20 --message-interval 50ms --message-size " +
                 size + " --duration 1s");
    INFO("size " << size << ": " << run.report.dump().substr(0, 1500));
    CHECK(run.status == 0);
    CHECK(u(run.report["messages_received"]) > 20 * 10);
    // At the end each connection may still wait for the echoes of its last
    // 250 ms of sends (5 at 50 ms): a fresh-clone run on a loaded 2-core
    // machine saw 80 of 420 in flight, 4 per connection.
    CHECK(u(run.report["messages_received"]) + 20 * 5 >= u(run.report["messages_sent"]));
    CHECK(u(run.report["rtt_us"]["count"]) == u(run.report["messages_received"]));
  }
}

TEST_CASE("Connections are spread round-robin over several targets", "[integration][load]") {
  MiniEchoServer a(30s), b(30s);
  const Run run = run_load(
      "--target 127.0.0.1:" + std::to_string(a.port()) + ",127.0.0.1:" + std::to_string(b.port()) +
      " --connections 101 --processes 3 --message-interval 100ms --duration 1s");
  CHECK(run.status == 0);
  CHECK(run.report["connections_established"] == 101);
  CHECK(a.accepted() == 51);
  CHECK(b.accepted() == 50);
}

TEST_CASE("SIGINT stops a long run early with a complete report and no stray processes",
          "[integration][load]") {
  MiniEchoServer server(30s);
  const std::string out =
      "/tmp/heartwheel-load-test-" + std::to_string(::getpid()) + "-sigint.json";
  auto argv = words(target(server) +
                    "--connections 100 --processes 2 --message-interval 100ms "
                    "--duration 5m --quiet --json " +
                    out);
  argv.insert(argv.begin(), HEARTWHEEL_LOAD_BIN);
  hwproc::Child load(argv);
  // Wait until every connection is up, then interrupt.
  for (int i = 0; i < 200 && server.accepted() < 100; ++i) std::this_thread::sleep_for(25ms);
  REQUIRE(server.accepted() == 100);
  std::this_thread::sleep_for(500ms);
  load.signal(SIGINT);
  const auto status = load.wait_exit(20s);
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  std::ifstream in(out);
  REQUIRE(in.good());
  const auto r = nlohmann::json::parse(in);
  std::remove(out.c_str());
  CHECK(r["interrupted"] == true);
  CHECK(r["connections_established"] == 100);
  CHECK(r["open_at_end"] == 100);
  CHECK(u(r["elapsed_ms"]) < 20000);
  CHECK(u(r["messages_received"]) > 0);
}

TEST_CASE("A refused target is reported per errno, not as a crash", "[integration][load]") {
  const ClosedPort refused;
  const Run run = run_load("--target 127.0.0.1:" + std::to_string(refused.port()) +
                           " --connections 20 --duration 1s");
  CHECK(run.report["connections_established"] == 0);
  CHECK(run.report["connect_errors"]["ECONNREFUSED"] == 20);
  CHECK(run.status == 1);  // a run that held nothing failed, whatever the report says
}

TEST_CASE("A worker's result reaches the supervisor even when its teardown outlasts the grace",
          "[integration][load]") {
  // Each worker reports at --duration (1 s), then takes 20 s to close its
  // connections; the supervisor kills them at duration + grace (1.5 s).
  MiniEchoServer server(30s);
  const auto t0 = hwproc::now();
  const Run run = run_load(target(server) +
                               "--connections 40 --processes 2 --message-interval 100ms "
                               "--duration 1s --grace 500ms",
                           {"HEARTWHEEL_LOAD_TEST_TEARDOWN_DELAY=20s"});
  const auto& r = run.report;
  INFO(r.dump(2).substr(0, 2000));
  CHECK(hwproc::ms_since(t0) < 10000);  // bounded by the grace, not the teardown
  CHECK(run.status == 0);
  CHECK(r["complete"] == true);
  CHECK(r["workers_reported"] == 2);
  CHECK(r["workers_failed"] == 0);
  CHECK(r["workers_killed_after_report"] == 2);
  CHECK(r["connections_established"] == 40);
  CHECK(r["open_at_end"] == 40);
  CHECK(u(r["messages_received"]) > 0);
  CHECK(run.summary.rfind("INCOMPLETE", 0) == std::string::npos);
}

TEST_CASE("A worker that never reports makes the result say it is incomplete",
          "[integration][load]") {
  MiniEchoServer server(30s);
  const Run run = run_load(target(server) +
                               "--connections 40 --processes 2 --message-interval 100ms "
                               "--duration 1s --grace 500ms",
                           {"HEARTWHEEL_LOAD_TEST_STALL_WORKER=1"});
  const auto& r = run.report;
  INFO(r.dump(2).substr(0, 2000) << "\nstdout:\n" << run.summary);
  CHECK(run.status == 1);
  CHECK(r["complete"] == false);
  CHECK(r["workers_expected"] == 2);
  CHECK(r["workers_reported"] == 1);
  CHECK(r["workers_failed"] == 1);
  CHECK(r["connections_established"] == 20);  // worker 0's half only
  CHECK(server.accepted() == 40);
  // The headline, not a log line, says so.
  CHECK(run.summary.rfind("INCOMPLETE: only 1 of 2 worker processes reported", 0) == 0);
}

TEST_CASE("Bad durations, targets and port ranges exit 2 with one error line, not a crash",
          "[integration][load]") {
  struct Bad {
    std::vector<std::string> args;
    const char* says;  // the error line names what to fix
  };
  const Bad cases[] = {
      {{"--target", "127.0.0.1:9", "--duration", "5x"}, "--duration: invalid duration '5x'"},
      {{"--target", "nope:9"}, "--target 'nope:9'"},
      {{"--target", "127.0.0.1:0"}, "port must be 1..65535"},
      {{"--target", "127.0.0.1:9", "--source-ips", "127.0.0.1", "--source-ports", "60000-50000"},
       "--source-ports '60000-50000' is reversed"},
      {{"--target", "127.0.0.1:9", "--source-ips", "127.0.0.9-127.0.0.1"}, "is reversed"},
      {{"--target", "127.0.0.1:9", "--no-such-flag"}, "--no-such-flag"},
  };
  for (const auto& bad : cases) {
    std::vector<std::string> argv{HEARTWHEEL_LOAD_BIN};
    argv.insert(argv.end(), bad.args.begin(), bad.args.end());
    hwproc::Child load(argv, {.capture_stderr = true, .env = {}});
    const auto status = load.wait_exit(10s);
    INFO(bad.args.back() << " -> stderr: " << load.errors());
    REQUIRE(status.has_value());
    CHECK(*status == 2);  // not 134 (an uncaught exception's abort, with a core dump)
    CHECK(load.errors().rfind("heartwheel-load: error: ", 0) == 0);
    CHECK(load.errors().find(bad.says) != std::string::npos);
    CHECK(std::count(load.errors().begin(), load.errors().end(), '\n') == 1);
    CHECK(load.output().empty());
  }
}

TEST_CASE("Impossible sizes are refused with advice before anything starts",
          "[integration][load]") {
  hwproc::Child load({HEARTWHEEL_LOAD_BIN, "--target", "127.0.0.1:9", "--connections", "50000",
                      "--processes", "1", "--duration", "1s"});
  const auto status = load.wait_exit(10s);
  REQUIRE(status.has_value());
  CHECK(*status == 2);
}

TEST_CASE("With --auto-reconnect every connection the server closes comes back after the backoff",
          "[integration][load][reconnect]") {
  // The server closes every silent connection after 1 s; each comes back
  // after 100 ms (jittered), so in 3.5 s each is lost and back at least twice.
  MiniEchoServer server(1s);
  const Run run = run_load(target(server) +
                           "--connections 50 --processes 2 --message-interval 0 --duration 3500ms "
                           "--auto-reconnect --reconnect-initial 100ms --reconnect-jitter 1 "
                           "--reconnect-stable 500ms");
  const auto& r = run.report;
  const auto& rc = r["reconnect"];
  INFO(rc.dump());
  CHECK(run.status == 0);
  CHECK(u(rc["losses"]) >= 100);
  CHECK(u(rc["reconnects"]) >= 100);
  CHECK(u(rc["reconnects"]) <= u(rc["losses"]));
  CHECK(rc["failures"] == 0);
  CHECK(rc["short_lived"] == 0);
  CHECK(u(rc["first_loss_ms"]) >= 900);
  std::uint64_t per_second = 0;
  for (const auto& n : rc["reconnects_per_s"]) per_second += u(n);
  CHECK(per_second == u(rc["reconnects"]));
  CHECK(u(r["open_at_end"]) + u(rc["down_at_end"]) == 50);
  CHECK(server.accepted() == 50 + u(rc["reconnects"]));
}

TEST_CASE("With --auto-reconnect a refused connect is retried with a doubling backoff",
          "[integration][load][reconnect]") {
  const ClosedPort refused;
  // No jitter: attempts at 0, 0.1, 0.3, 0.7 and 1.5 s; the next would be at 3.1 s.
  const Run run = run_load("--target 127.0.0.1:" + std::to_string(refused.port()) +
                           " --connections 10 --duration 2500ms --auto-reconnect "
                           "--reconnect-initial 100ms --reconnect-jitter 0");
  const auto& rc = run.report["reconnect"];
  INFO(rc.dump());
  CHECK(run.report["connect_errors"]["ECONNREFUSED"] == 50);
  CHECK(rc["attempts"] == 40);
  CHECK(rc["failures"] == 40);
  CHECK(rc["errors"]["ECONNREFUSED"] == 40);
  CHECK(rc["reconnects"] == 0);
}

TEST_CASE("With --auto-reconnect a server that closes right after accepting makes the backoff grow",
          "[integration][load][reconnect]") {
  // The server closes every silent connection 50 ms after it opened. Counted
  // as failures (--reconnect-stable 1s), the waits grow 100, 200, 400, 800 ms
  // (no jitter): about 5 reconnects per client in 3 s. Reset on every open
  // (--reconnect-stable 0), a client would be back every ~150 ms: about 20.
  MiniEchoServer server(50ms);
  const std::string args = target(server) +
                           "--connections 20 --message-interval 0 --duration 3s --auto-reconnect "
                           "--reconnect-initial 100ms --reconnect-jitter 0 --reconnect-stable ";
  const Run growing = run_load(args + "1s");
  const Run hammering = run_load(args + "0");
  const auto& g = growing.report["reconnect"];
  const auto& h = hammering.report["reconnect"];
  INFO(g.dump() << "\n" << h.dump());
  CHECK(u(g["short_lived"]) == u(g["losses"]));
  CHECK(u(g["reconnects"]) <= 20 * 6);
  CHECK(h["short_lived"] == 0);
  CHECK(u(h["reconnects"]) >= 20 * 12);
}
