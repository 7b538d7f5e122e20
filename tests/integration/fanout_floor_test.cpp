// heartwheel-fanout-floor end to end with small N: its receivers connect in
// one and in several processes, every byte arrives, and the JSON carries the
// fields tools/ws-compare/run.py and docs/BENCHMARKS.md read. The program's
// path comes from the build (HEARTWHEEL_FANOUT_FLOOR_BIN).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "process_support.h"

using namespace std::chrono_literals;
using nlohmann::json;

namespace {

struct Run {
  int status = -1;
  std::map<std::string, json> modes;  // by "mode"
  json summary;
};

Run run_floor(std::vector<std::string> args) {
  args.insert(args.begin(), HEARTWHEEL_FANOUT_FLOOR_BIN);
  hwproc::Child child(args, {.capture_stderr = true, .env = {}});
  Run run;
  run.status = child.wait_exit(60s).value_or(-1);
  INFO("stdout: " << child.output() << "\nstderr: " << child.errors());
  std::istringstream lines(child.output());
  for (std::string line; std::getline(lines, line);) {
    json j;
    REQUIRE_NOTHROW(j = json::parse(line));
    REQUIRE(j.at("bench") == "fanout-floor");
    if (j.contains("summary"))
      run.summary = j;
    else
      run.modes[j.at("mode").get<std::string>()] = j;
  }
  return run;
}

// The fields of one mode's line, against the run's shape.
void check_mode(const json& j, std::size_t subscribers, std::size_t messages) {
  INFO(j.dump());
  CHECK(j.at("subscribers") == subscribers);
  CHECK(j.at("messages") == messages);
  CHECK(j.at("delivered") == subscribers * messages);
  CHECK(j.at("frame_bytes") == 100);
  CHECK(j.at("short_sends") == 0);  // 100-byte frames to draining receivers: always taken whole
  const double cpu = j.at("cpu_us_per_message");
  const double user = j.at("user_us_per_message");
  const double system = j.at("system_us_per_message");
  CHECK(cpu > 0);
  CHECK(user >= 0);
  CHECK(system >= 0);
  // The split covers the mode thread's life (its waits and wake-ups too),
  // the exact total only the send loops: at this size the two agree loosely.
  CHECK(user + system >= 0.3 * cpu);
  CHECK(user + system <= 10 * cpu + 50);
  CHECK(j.at("rounds_cpu_us_per_message").size() == 2);
  CHECK(j.at("ratio_to_write").get<double>() > 0);
}

}  // namespace

TEST_CASE("The fan-out floor delivers every frame and reports each mode's CPU per message",
          "[integration][bench][fanout_floor]") {
  hwproc::Watchdog watchdog(90s);
  // 30 receivers in three processes (10 each): the path that runs past the
  // per-process file limit at full size.
  const Run run = run_floor({"--subscribers", "30", "--messages", "4", "--rounds", "2",
                             "--interval", "5ms", "--per-process", "10", "--batch", "8"});
  REQUIRE(run.status == 0);
  const json& s = run.summary;
  INFO(s.dump());
  REQUIRE(s.is_object());
  CHECK(s.at("receiver_processes") == 3);
  CHECK(s.at("all_delivered") == true);
  CHECK(s.at("receivers_exited") == true);
  CHECK(s.at("loadavg").size() == 3);
  const bool uring = s.at("uring_built");
  const std::size_t modes = uring ? 3 : 1;
  REQUIRE(run.modes.size() == modes);
  // Every mode's frames, the unmeasured warm-up publication included.
  CHECK(s.at("bytes_delivered") == modes * 30 * (4 * 2 + 1) * 100);
  check_mode(run.modes.at("write"), 30, 8);
  CHECK(run.modes.at("write").at("ratio_to_write") == 1.0);
  CHECK(run.modes.at("write").at("syscalls_per_message") == 1.0);
  if (uring) {
    for (const char* mode : {"uring", "uring_fixed"}) {
      const json& j = run.modes.at(mode);
      check_mode(j, 30, 8);
      CHECK(j.at("batch") == 8);
      // 30 sends in batches of 8: 4 io_uring_enter calls a publication.
      CHECK(j.at("syscalls_per_message").get<double>() == Approx(4.0 / 30).margin(0.001));
    }
  }
}

TEST_CASE("The fan-out floor runs only the modes asked for and refuses unknown ones",
          "[integration][bench][fanout_floor]") {
  hwproc::Watchdog watchdog(60s);
  const Run run = run_floor({"--subscribers", "5", "--messages", "2", "--rounds", "2",
                             "--interval", "1ms", "--modes", "write"});
  REQUIRE(run.status == 0);
  REQUIRE(run.modes.size() == 1);
  check_mode(run.modes.at("write"), 5, 4);
  CHECK(run.summary.at("receiver_processes") == 1);
  CHECK(run.summary.at("bytes_delivered") == 5 * (2 * 2 + 1) * 100);

  CHECK(run_floor({"--modes", "sendmmsg"}).status == 2);
  CHECK(run_floor({"--subscribers", "0"}).status == 2);
  CHECK(run_floor({"--interval", "soon"}).status == 2);
}
