// Every program follows one exit status convention (README, "Exit status"):
// an unknown flag or a bad value is a usage error, exit 2, reported as one
// line "NAME: error: WHAT" on stderr before anything starts; --help exits 0.
// The programs' paths come from the build (only those that were built).
#include <algorithm>
#include <string>
#include <vector>

#include "process_support.h"

using namespace std::chrono_literals;

namespace {

struct Program {
  const char* name;  // as it names itself in error lines
  const char* path;
  std::vector<std::string> bad_value;   // arguments with one wrong value
  const char* says;                     // what the error line must mention
  std::vector<std::string> required{};  // flags it cannot start without
};

std::vector<Program> programs() {
  return {
#ifdef HEARTWHEEL_ECHO_BIN
      {"heartwheel-echo", HEARTWHEEL_ECHO_BIN, {"--read-idle", "5x"}, "--read-idle"},
#endif
#ifdef HEARTWHEEL_ECHO_EXAMPLE_BIN
      {"heartwheel-echo-example", HEARTWHEEL_ECHO_EXAMPLE_BIN, {"127.0.0.1:0", "5x"}, "'5x'"},
#endif
#ifdef HEARTWHEEL_HTTP_BIN
      {"heartwheel-http", HEARTWHEEL_HTTP_BIN, {"--tick", "0"}, "--tick"},
#endif
#ifdef HEARTWHEEL_CHAT_BIN
      {"heartwheel-chat", HEARTWHEEL_CHAT_BIN, {"--slow-consumer", "drop"}, "--slow-consumer"},
#endif
#ifdef HEARTWHEEL_PUSH_BIN
      {"heartwheel-push",
       HEARTWHEEL_PUSH_BIN,
       {"--redis", "127.0.0.1:1", "--lease", "soon"},
       "--lease",
       {"--redis", "127.0.0.1:1"}},
#endif
#ifdef HEARTWHEEL_RPC_SERVER_BIN
      {"heartwheel-rpc-server", HEARTWHEEL_RPC_SERVER_BIN, {"--heartbeat", "soon"}, "--heartbeat"},
#endif
#ifdef HEARTWHEEL_RPC_CLIENT_BIN
      {"heartwheel-rpc-client",
       HEARTWHEEL_RPC_CLIENT_BIN,
       {"--server", "127.0.0.1:9", "--call-timeout", "0"},
       "--call-timeout",
       {"--server", "127.0.0.1:9"}},
#endif
#ifdef HEARTWHEEL_LOAD_BIN
      {"heartwheel-load",
       HEARTWHEEL_LOAD_BIN,
       {"--target", "127.0.0.1:9", "-c", "0"},
       "--connections",
       {"--target", "127.0.0.1:9"}},
#endif
#ifdef HEARTWHEEL_TIMER_BENCH_BIN
      {"heartwheel-timer-bench", HEARTWHEEL_TIMER_BENCH_BIN, {"--n", "0"}, "'0'"},
#endif
#ifdef HEARTWHEEL_EXPIRING_MAP_BENCH_BIN
      {"heartwheel-expiring-map-bench", HEARTWHEEL_EXPIRING_MAP_BENCH_BIN, {"--n", "0"}, "'0'"},
#endif
#ifdef HEARTWHEEL_IDLE_BENCH_BIN
      {"heartwheel-idle-bench", HEARTWHEEL_IDLE_BENCH_BIN, {"--tick", "0"}, "--tick"},
#endif
#ifdef HEARTWHEEL_IDLE_REFRESH_BENCH_BIN
      {"heartwheel-idle-refresh-bench",
       HEARTWHEEL_IDLE_REFRESH_BENCH_BIN,
       {"--duration", "0"},
       "--duration"},
#endif
#ifdef HEARTWHEEL_CLIENT_BENCH_BIN
      {"heartwheel-client-bench",
       HEARTWHEEL_CLIENT_BENCH_BIN,
       {"calls", "--server", "127.0.0.1:9", "--balance", "random"},
       "--balance",
       {"calls", "--server", "127.0.0.1:9"}},
#endif
#ifdef HEARTWHEEL_RPC_CALLS_BENCH_BIN
      {"heartwheel-rpc-calls-bench", HEARTWHEEL_RPC_CALLS_BENCH_BIN, {"--calls", "0"}, "--calls"},
#endif
#ifdef HEARTWHEEL_OVERLOAD_BENCH_BIN
      {"heartwheel-overload-bench", HEARTWHEEL_OVERLOAD_BENCH_BIN, {"--floor", "0"}, "--floor"},
#endif
#ifdef HEARTWHEEL_FANOUT_BENCH_BIN
      {"heartwheel-fanout-bench",
       HEARTWHEEL_FANOUT_BENCH_BIN,
       {"--connect", "127.0.0.1:9", "--subscribers", "0"},
       "'0'",
       {"--connect", "127.0.0.1:9"}},
#endif
#ifdef HEARTWHEEL_AUTH_BENCH_BIN
      {"heartwheel-auth-bench", HEARTWHEEL_AUTH_BENCH_BIN, {"--duration", "0"}, "--duration"},
#endif
#ifdef HEARTWHEEL_FANOUT_FLOOR_BIN
      {"heartwheel-fanout-floor",
       HEARTWHEEL_FANOUT_FLOOR_BIN,
       {"--subscribers", "0"},
       "--subscribers"},
#endif
#ifdef HEARTWHEEL_FAULT_LOCK_BIN
      {"heartwheel-fault-lock",
       HEARTWHEEL_FAULT_LOCK_BIN,
       {"--redis", "127.0.0.1:1", "--store", "127.0.0.1:1", "--id", "A", "--out", "/dev/null",
        "--lease", "soon"},
       "--lease",
       {"--redis", "127.0.0.1:1", "--store", "127.0.0.1:1", "--id", "A", "--out", "/dev/null"}},
#endif
#ifdef HEARTWHEEL_HTTP_SESSION_BENCH_BIN
      {"heartwheel-http-session-bench",
       HEARTWHEEL_HTTP_SESSION_BENCH_BIN,
       {"--requests", "0"},
       "--requests"},
#endif
  };
}

// Runs `path args...`; returns {exit status, stdout, stderr}. Bounded: a
// program that starts serving instead of refusing is killed after 10 s.
struct Outcome {
  int status;
  std::string out, err;
};
Outcome run(const Program& p, std::vector<std::string> args) {
  args.insert(args.begin(), p.path);
  hwproc::Child child(args, {.capture_stderr = true, .env = {}});
  const auto status = child.wait_exit(10s);
  return {status.value_or(-1), child.output(), child.errors()};
}

void check_usage_error(const Program& p, const Outcome& o, const std::string& says) {
  INFO(p.name << ": status " << o.status << ", stderr: " << o.err);
  CHECK(o.status == 2);
  CHECK(o.err.rfind(std::string(p.name) + ": error: ", 0) == 0);
  CHECK(o.err.find(says) != std::string::npos);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("Every program exits 2 with one error line for an unknown flag", "[integration][cli]") {
  const auto all = programs();
  REQUIRE(!all.empty());
  for (const auto& p : all) {
    auto args = p.required;
    args.push_back("--no-such-flag");
    check_usage_error(p, run(p, args), "--no-such-flag");
  }
}

TEST_CASE("Every program exits 2 with one error line for a bad value", "[integration][cli]") {
  for (const auto& p : programs()) check_usage_error(p, run(p, p.bad_value), p.says);
}

TEST_CASE("Every program's --help exits 0 and prints its usage on stdout", "[integration][cli]") {
  for (const auto& p : programs()) {
    const Outcome o = run(p, {"--help"});
    INFO(p.name << ": status " << o.status);
    CHECK(o.status == 0);
    CHECK(o.out.find("Exit status") != std::string::npos);
    CHECK(o.err.empty());
  }
}

TEST_CASE("Every server program refuses protection flags that contradict each other",
          "[integration][cli]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--drop-idle-at-limit"}, "--max-connections"},
      {{"--overload-saturation", "100"}, "floor"},
      {{"--overload-start", "10", "--overload-saturation", "5", "--overload-min-scale", "0.5"},
       "--overload-saturation"},
      {{"--overload-saturation", "9", "--overload-min-scale", "0.5", "--overload-min-timeout",
        "1s"},
       "not both"},
      {{"--overload-min-timeout", "1s"}, "--overload-saturation"},
      {{"--proxy-protocol", "--proxy-header-timeout", "0"}, "--proxy-header-timeout"},
      {{"--proxy-protocol", "--proxy-protocol-from", "10.0.0.1/8"}, "10.0.0.1/8"},
      {{"--proxy-protocol", "--proxy-protocol-from", "127.0.0.0/8", "--proxy-protocol-from",
        "example.com"},
       "example.com"},
      {{"--proxy-protocol-from", "10.0.0.0/8"}, "needs --proxy-protocol"},
      {{"--overload-memory-saturation", "lots"}, "--overload-memory-saturation"},
  };
  for (const auto& p : programs()) {
    const std::string name = p.name;
    if (name != "heartwheel-echo" && name != "heartwheel-http" && name != "heartwheel-rpc-server" &&
        name != "heartwheel-push")
      continue;
    for (const auto& [args, says] : bad) {
      auto all = p.required;
      all.insert(all.end(), args.begin(), args.end());
      check_usage_error(p, run(p, all), says);
    }
  }
}
