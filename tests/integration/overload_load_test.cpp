// heartwheel-load against heartwheel-echo with its protection flags: under
// overload the harness's silent connections are the ones closed (at the
// scaled idle timeout, or dropped for newcomers at the limit) and no live one
// is; the per-address limit holds across worker threads. Registered only
// when both programs are built (HEARTWHEEL_ECHO_BIN, HEARTWHEEL_LOAD_BIN).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process_support.h"

using namespace std::chrono_literals;
using nlohmann::json;

namespace {

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

// heartwheel-echo with `args`, its final statistics in the temp dir.
struct Echo {
  hwproc::TempDir dir;
  std::string stats = dir.file("echo.json");
  hwproc::Child child;
  int port;
  explicit Echo(std::vector<std::string> args)
      : child([&] {
          args.insert(args.begin(),
                      {HEARTWHEEL_ECHO_BIN, "--listen", "127.0.0.1:0", "--stats-json", stats});
          return args;
        }()),
        port(child.wait_listening(10s)) {
    REQUIRE(port > 0);
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port); }
  json stop() {
    child.signal(SIGTERM);
    REQUIRE(child.wait_exit(20s) == 0);
    return read_json(stats);
  }
};

// heartwheel-load with `args`; returns its --json result.
struct Load {
  std::string out;
  hwproc::Child child;
  Load(const std::string& json_path, std::vector<std::string> args)
      : out(json_path), child([&] {
          args.insert(args.begin(), HEARTWHEEL_LOAD_BIN);
          for (const char* a : {"--quiet", "--json"}) args.emplace_back(a);
          args.push_back(json_path);
          return args;
        }()) {}
  json finish(int expected_status = 0) {
    const auto status = child.wait_exit(90s);
    REQUIRE(status.has_value());
    const json r = read_json(out);
    INFO(r.dump(2).substr(0, 3000));
    CHECK(*status == expected_status);
    return r;
  }
};

}  // namespace

TEST_CASE(
    "Under overload heartwheel-echo closes silent connections at the scaled idle timeout and no "
    "live one",
    "[integration][load][overload]") {
  // 30 s unscaled; saturated at 200 of the harness's 400 connections, where
  // the read idle timeout is 1 s. The dead quarter keeps it saturated (300).
  Echo echo({"--read-idle", "30s", "--tick", "10ms", "--overload-start", "100",
             "--overload-saturation", "200", "--overload-min-timeout", "1s"});
  Load load(echo.dir.file("load.json"),
            {"--target",           echo.target(), "--connections",       "400",
             "--processes",        "2",           "--source-ips",        "127.0.0.1-127.0.0.2",
             "--connect-rate",     "4000",        "--message-interval",  "250ms",
             "--dead-fraction",    "0.25",        "--expect-idle-close", "1s",
             "--idle-close-slack", "1500ms",      "--duration",          "5s"});
  const json r = load.finish();
  const json s = echo.stop();
  INFO(s.dump(2).substr(0, 3000));
  CHECK(r["connections_established"] == 400);
  CHECK(r["dead"]["count"] == 100);
  CHECK(r["dead"]["closed"] == 100);  // unscaled they would all still be open at 5 s
  CHECK(r["dead"]["close_after_ms"]["max"].get<int>() <= 2500);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(s["closed_by_reason"]["read_idle"] == 100);
  CHECK(s["overload"]["scale_changes"].get<int>() > 0);
  CHECK(s["overload"]["swept"].get<int>() > 0);
}

TEST_CASE(
    "At its connection limit heartwheel-echo drops silent connections for newcomers and no live "
    "one",
    "[integration][load][overload]") {
  Echo echo({"--max-connections", "300", "--drop-idle-at-limit", "--drop-idle-after", "1s",
             "--tick", "10ms"});
  // 300 connections, a quarter of them silent after their first echo.
  Load first(echo.dir.file("first.json"),
             {"--target", echo.target(), "--connections", "300", "--message-interval", "250ms",
              "--dead-fraction", "0.25", "--connect-rate", "4000", "--duration", "7s"});
  hwproc::sleep_for(hwproc::Ms(2500));  // the silent ones are idle for > 1 s now
  // 60 newcomers at the limit: each takes the place of a silent one.
  Load second(echo.dir.file("second.json"),
              {"--target", echo.target(), "--connections", "60", "--message-interval", "250ms",
               "--source-ips", "127.0.0.3", "--duration", "3s"});
  const json b = second.finish();
  const json a = first.finish();
  const json s = echo.stop();
  INFO(s.dump(2).substr(0, 3000));
  CHECK(a["connections_established"] == 300);
  CHECK(a["dead"]["count"] == 75);
  CHECK(a["dead"]["closed"] == 60);
  CHECK(a["live_closed_by_server"] == 0);
  CHECK(b["connections_established"] == 60);
  CHECK(b["live_closed_by_server"] == 0);
  CHECK(b["messages_received"].get<int>() > 60 * 5);
  CHECK(s["closed_by_reason"]["overload"] == 60);
  CHECK(s["closed_by_reason"]["limit"] == 0);
}

TEST_CASE(
    "heartwheel-echo resets connections over --max-connections-per-ip with one count for all its "
    "workers",
    "[integration][load][ip_limit]") {
  Echo echo({"--workers", "2", "--max-connections-per-ip", "40"});
  // 50 connections from each of 4 addresses; 40 each are allowed.
  Load load(echo.dir.file("load.json"),
            {"--target", echo.target(), "--connections", "200", "--source-ips",
             "127.0.0.1-127.0.0.4", "--message-interval", "250ms", "--duration", "3s"});
  const json r = load.finish();
  const json s = echo.stop();
  INFO(s.dump(2).substr(0, 3000));
  CHECK(s["closed_by_reason"]["ip_limit"] == 40);  // per worker it would be fewer
  // The harness sees each reset either on connect or on its first read.
  const int reset_on_connect = r["connect_errors"].value("ECONNRESET", 0);
  CHECK(r["connections_attempted"] == 200);
  CHECK(r["connections_established"].get<int>() + reset_on_connect == 200);
  CHECK(r["live_closed_by_server"].get<int>() + reset_on_connect == 40);
  CHECK(r["open_at_end"] == 160);
}
