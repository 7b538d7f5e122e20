// heartwheel-load against the real heartwheel-echo (a few hundred
// connections, some dead): the server's read-idle timeout must close every
// dead connection on time and no live one. Registered only when the
// heartwheel-echo target exists (HEARTWHEEL_ECHO_BIN, HEARTWHEEL_LOAD_BIN).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <csignal>

#include "process_support.h"

using namespace std::chrono_literals;

TEST_CASE(
    "heartwheel-echo closes the harness's dead connections after read-idle and keeps the live ones",
    "[integration][load][echo]") {
  hwproc::Child server(
      {HEARTWHEEL_ECHO_BIN, "--listen", "127.0.0.1:0", "--read-idle", "1s", "--tick", "10ms"});
  const int port = server.wait_listening(10s);
  REQUIRE(port > 0);
  const std::string target = "127.0.0.1:" + std::to_string(port);

  const std::string out = "/tmp/heartwheel-load-echo-" + std::to_string(::getpid()) + ".json";
  hwproc::Child load({HEARTWHEEL_LOAD_BIN,
              "--target",
              target,
              "--connections",
              "400",
              "--processes",
              "2",
              "--source-ips",
              "127.0.0.1-127.0.0.2",
              "--message-interval",
              "250ms",
              "--dead-fraction",
              "0.25",
              "--expect-idle-close",
              "1s",
              "--idle-close-slack",
              "1500ms",
              "--duration",
              "5s",
              "--quiet",
              "--json",
              out});
  const auto status = load.wait_exit(60s);
  server.signal(SIGTERM);
  CHECK(server.wait_exit(15s).has_value());
  REQUIRE(status.has_value());
  std::ifstream in(out);
  REQUIRE(in.good());
  const auto r = nlohmann::json::parse(in);
  std::remove(out.c_str());
  INFO(r.dump(2).substr(0, 3000));
  CHECK(*status == 0);
  CHECK(r["connections_established"] == 400);
  CHECK(r["dead"]["count"] == 100);
  CHECK(r["dead"]["closed"] == 100);
  CHECK(r["dead"]["close_after_ms"]["min"].get<int>() >= 950);
  CHECK(r["dead"]["close_after_ms"]["max"].get<int>() <= 2500);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(r["messages_received"].get<std::uint64_t>() > 300 * 10);
  CHECK(r["rtt_us"]["p50"].get<std::uint64_t>() > 0);
}
