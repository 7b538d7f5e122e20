// heartwheel-load end to end against a small in-test echo server that closes
// connections idle for 1 s: the JSON report must show every connection
// established, every dead one closed about 1 s after its last send, and no
// live one closed. HEARTWHEEL_LOAD_BIN comes from the build.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "mini_echo_server.h"
#include "subprocess.h"

using namespace std::chrono_literals;
using heartwheel::test::MiniEchoServer;
using heartwheel::test::Subprocess;

namespace {
std::string temp_path(const char* name) {
  return "/tmp/heartwheel-load-test-" + std::to_string(::getpid()) + "-" + name + ".json";
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  nlohmann::json j = nlohmann::json::parse(in);
  std::remove(path.c_str());
  return j;
}
}  // namespace

TEST_CASE("The harness sees dead connections closed at the idle timeout and no live one closed",
          "[integration][load]") {
  MiniEchoServer server(1s);
  const std::string out = temp_path("idle");
  Subprocess load;
  load.start({HEARTWHEEL_LOAD_BIN,
              "--target",
              "127.0.0.1:" + std::to_string(server.port()),
              "--connections",
              "300",
              "--processes",
              "2",
              "--source-ips",
              "127.0.0.1-127.0.0.2",
              "--message-interval",
              "200ms",
              "--dead-fraction",
              "0.2",
              "--expect-idle-close",
              "1s",
              "--idle-close-slack",
              "1500ms",
              "--duration",
              "4s",
              "--quiet",
              "--json",
              out},
             false);
  const auto status = load.wait(60s);
  REQUIRE(status.has_value());
  const auto r = read_json(out);
  INFO(r.dump(2).substr(0, 3000));
  CHECK(*status == 0);
  CHECK(r["connections_established"] == 300);
  CHECK(r["connect_errors"].empty());
  CHECK(r["workers_failed"] == 0);
  CHECK(r["dead"]["count"] == 60);
  CHECK(r["dead"]["closed"] == 60);
  CHECK(r["dead"]["close_after_ms"]["min"].get<int>() >= 950);
  CHECK(r["dead"]["close_after_ms"]["max"].get<int>() <= 2500);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(r["expectations_met"] == true);
  CHECK(r["messages_received"].get<std::uint64_t>() > 240 * 10);
  CHECK(r["rtt_us"]["p50"].get<std::uint64_t>() > 0);
  CHECK(r["rtt_us"]["max"].get<std::uint64_t>() >= r["rtt_us"]["p99"].get<std::uint64_t>());
  CHECK(r["processes"] == 2);
  CHECK(server.accepted() == 300);
  CHECK(server.idle_closed() == 60);
}

TEST_CASE("In rpc mode requests get responses, heartbeats get PONGs and dead peers answer nothing",
          "[integration][load][rpc]") {
  MiniEchoServer server(1s, MiniEchoServer::Protocol::rpc);
  const std::string out = temp_path("rpc");
  Subprocess load;
  load.start({HEARTWHEEL_LOAD_BIN,
              "--mode",
              "rpc",
              "--target",
              "127.0.0.1:" + std::to_string(server.port()),
              "--connections",
              "100",
              "--processes",
              "2",
              "--message-interval",
              "400ms",
              "--heartbeat",
              "150ms",
              "--dead-fraction",
              "0.1",
              "--expect-idle-close",
              "1s",
              "--idle-close-slack",
              "1500ms",
              "--duration",
              "3s",
              "--quiet",
              "--json",
              out},
             false);
  const auto status = load.wait(60s);
  REQUIRE(status.has_value());
  const auto r = read_json(out);
  INFO(r.dump(2).substr(0, 3000));
  CHECK(*status == 0);
  CHECK(r["connections_established"] == 100);
  CHECK(r["errors"].empty());
  CHECK(r["rpc_errors"] == 0);
  // Every request but those in flight at the end got its RESPONSE.
  CHECK(r["messages_received"].get<std::uint64_t>() + 100 >=
        r["messages_sent"].get<std::uint64_t>());
  CHECK(r["messages_received"].get<std::uint64_t>() > 90 * 5);
  // Between requests 400 ms apart, a 150 ms heartbeat sends two PINGs.
  CHECK(r["pings_sent"].get<std::uint64_t>() > 90 * 8);
  CHECK(r["pongs_received"].get<std::uint64_t>() + 100 >= r["pings_sent"].get<std::uint64_t>());
  CHECK(r["heartbeat_rtt_us"]["count"] == r["pongs_received"]);
  // The server PINGs after each RESPONSE: live connections answer, dead ones do not.
  CHECK(r["pings_answered"].get<std::uint64_t>() > 0);
  CHECK(r["pings_answered"].get<std::uint64_t>() <= r["messages_received"].get<std::uint64_t>());
  CHECK(r["dead"]["count"] == 10);
  CHECK(r["dead"]["closed"] == 10);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(server.bad_frames() == 0);
  CHECK(server.pongs_received() == r["pings_answered"].get<std::uint64_t>());
}

TEST_CASE("SIGINT stops a long run early with a complete report and no stray processes",
          "[integration][load]") {
  MiniEchoServer server(30s);
  const std::string out = temp_path("sigint");
  Subprocess load;
  load.start({HEARTWHEEL_LOAD_BIN, "--target", "127.0.0.1:" + std::to_string(server.port()),
              "--connections", "100", "--processes", "2", "--message-interval", "100ms",
              "--duration", "5m", "--quiet", "--json", out},
             false);
  // Wait until every connection is up, then interrupt.
  for (int i = 0; i < 200 && server.accepted() < 100; ++i) std::this_thread::sleep_for(25ms);
  REQUIRE(server.accepted() == 100);
  std::this_thread::sleep_for(500ms);
  load.signal(SIGINT);
  const auto status = load.wait(20s);
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  const auto r = read_json(out);
  CHECK(r["interrupted"] == true);
  CHECK(r["connections_established"] == 100);
  CHECK(r["open_at_end"] == 100);
  CHECK(r["elapsed_ms"].get<int>() < 20000);
  CHECK(r["messages_received"].get<std::uint64_t>() > 0);
}

TEST_CASE("A refused target is reported per errno, not as a crash", "[integration][load]") {
  // Bind a port and close it again: nothing listens there now.
  int port = 0;
  {
    MiniEchoServer gone(1s);
    port = gone.port();
  }
  const std::string out = temp_path("refused");
  Subprocess load;
  load.start({HEARTWHEEL_LOAD_BIN, "--target", "127.0.0.1:" + std::to_string(port), "--connections",
              "20", "--duration", "1s", "--quiet", "--json", out},
             false);
  const auto status = load.wait(30s);
  REQUIRE(status.has_value());
  const auto r = read_json(out);
  CHECK(r["connections_established"] == 0);
  CHECK(r["connect_errors"]["ECONNREFUSED"] == 20);
}

TEST_CASE("Impossible sizes are refused with advice before anything starts",
          "[integration][load]") {
  Subprocess load;
  load.start({HEARTWHEEL_LOAD_BIN, "--target", "127.0.0.1:9", "--connections", "50000",
              "--processes", "1", "--duration", "1s"},
             false);
  const auto status = load.wait(10s);
  REQUIRE(status.has_value());
  CHECK(*status == 2);
}
