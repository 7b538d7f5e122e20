// Runs the benchmarks with tiny sizes and --json, and checks that every line
// parses and carries the fields docs/BENCHMARKS.md and scripts rely on. The
// paths of the executables come from the build (TIMER_BENCH, IDLE_BENCH, PUBSUB_BENCH,
// CLOCK_BENCH, EXPIRING_MAP_BENCH).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace {

struct Run {
  int status = -1;
  std::vector<nlohmann::json> lines;
};

Run run_json(const std::string& command) {
  Run run;
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int raw = pclose(pipe);
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::size_t start = 0;
  while (start < out.size()) {
    const std::size_t end = out.find('\n', start);
    const std::string line = out.substr(start, end - start);
    if (!line.empty()) {
      INFO("line: " << line);
      REQUIRE_NOTHROW(run.lines.push_back(nlohmann::json::parse(line)));
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return run;
}

}  // namespace

TEST_CASE("The timer bench prints one JSON object per impl, op and N, with ratios to the wheel", "[bench][smoke]") {
  const Run run = run_json(std::string(TIMER_BENCH) + " --json --n 1000,3000 --reps 1 --min-ops 3000");
  REQUIRE(run.status == 0);
  std::set<std::string> impls, ops;
  std::set<std::size_t> sizes;
  std::size_t rows = 0, targets = 0;
  for (const auto& j : run.lines) {
    REQUIRE(j.at("bench") == "timer");
    if (j.contains("target")) {
      ++targets;
      REQUIRE(j.at("met").is_boolean());
      continue;
    }
    ++rows;
    impls.insert(j.at("impl").get<std::string>());
    ops.insert(j.at("op").get<std::string>() + "/" + j.at("order").get<std::string>());
    sizes.insert(j.at("n").get<std::size_t>());
    CHECK(j.at("ns_per_op").get<double>() > 0);
    CHECK(j.at("bytes_per_entry").get<double>() >= 16);
    CHECK(j.at("ratio_vs_wheel").get<double>() > 0);
    if (j.at("impl") == "wheel") CHECK(j.at("ratio_vs_wheel").get<double>() == Approx(1.0));
  }
  CHECK(impls == std::set<std::string>{"wheel", "heap4", "uv_timer"});
  CHECK(ops == std::set<std::string>{"schedule/seq", "cancel/random", "refresh/seq", "refresh/random",
                                     "refresh/random_owner_hot", "expire/deadline"});
  CHECK(sizes == std::set<std::size_t>{1000, 3000});
  CHECK(rows == 3 * 6 * 2);
  CHECK(targets >= 1);  // the entry-size target is always checked
}

TEST_CASE("The idle bench checks every tracker against the ground truth and names the faster default",
          "[bench][smoke]") {
  const Run run = run_json(std::string(IDLE_BENCH) +
                           " --json --connections 2000 --read-idle 3s --write-idle 3s --request-timeout 1s"
                           " --writes-per-sec 1 --warmup 500ms");
  REQUIRE(run.status == 0);
  std::set<std::string> impls;
  bool conclusion = false;
  for (const auto& j : run.lines) {
    REQUIRE(j.at("bench") == "idle");
    if (j.contains("conclusion")) {
      conclusion = true;
      CHECK((j.at("impl") == "wheel_lazy" || j.at("impl") == "wheel_eager"));
      CHECK(j.at("all_correct") == true);
      continue;
    }
    impls.insert(j.at("impl").get<std::string>());
    CHECK(j.at("events").get<std::size_t>() > 0);
    for (const char* field : {"io_ns_per_event", "tracking_ns_per_event", "expiry_ms", "total_ms", "timer_ops",
                              "fires", "rearms", "ops_per_sec", "bytes_per_connection"})
      CHECK(j.contains(field));
    if (j.at("impl") == "none") {
      CHECK(j.at("correct").is_null());
      continue;
    }
    CHECK(j.at("correct") == true);
    CHECK(j.at("closed_silent") == j.at("silent"));
    CHECK(j.at("closed_active") == 0);
    CHECK(j.contains("ratio_vs_eager"));
    CHECK(j.contains("ratio_vs_uv"));
  }
  CHECK(impls == std::set<std::string>{"none", "wheel_lazy", "wheel_eager", "uv_timer"});
  CHECK(conclusion);
}

TEST_CASE("The benches reject a size without a usable number, with status 2", "[bench][smoke]") {
  CHECK(run_json(std::string(TIMER_BENCH) + " --json --n 0").status == 2);
  CHECK(run_json(std::string(IDLE_BENCH) + " --json --connections 10x").status == 2);
}

TEST_CASE("The pubsub bench prints one JSON line with its fan-out and memory figures",
          "[bench][smoke][pubsub]") {
  const Run run = run_json(std::string(PUBSUB_BENCH) + " --subscribers 2k --publications 5");
  REQUIRE(run.status == 0);
  REQUIRE(run.lines.size() == 1);
  const auto& j = run.lines[0];
  CHECK(j.at("bench") == "pubsub");
  CHECK(j.at("subscribers") == 2000);
  CHECK(j.at("sizeof_subscription").get<int>() <= 48);
  CHECK(j.at("heap_bytes_per_subscription").get<double>() < 100);
  CHECK(j.at("encodes_per_publication").get<double>() == 1.0);
  for (const char* k : {"fanout_read_ns_per_subscriber", "fanout_keep_ns_per_subscriber",
                        "fanout_copy_ns_per_subscriber", "subscribe_ns", "unsubscribe_ns"})
    CHECK(j.at(k).get<double>() > 0);
  CHECK(j.at("deliveries") == 3 * 6 * 2000);
  // Ten times the subscribers, the same allocations per publication: nothing
  // is allocated per subscriber.
  const Run bigger = run_json(std::string(PUBSUB_BENCH) + " --subscribers 20k --publications 5");
  REQUIRE(bigger.status == 0);
  REQUIRE(bigger.lines.size() == 1);
  CHECK(bigger.lines[0].at("allocations_per_publication") == j.at("allocations_per_publication"));
}

TEST_CASE("The timer bench measures only the --impls stores and rejects unknown ones (status 2)",
          "[bench][smoke]") {
  const Run run = run_json(std::string(TIMER_BENCH) +
                           " --json --n 1000 --reps 1 --min-ops 1000 --impls wheel,heap4");
  REQUIRE(run.status == 0);
  std::set<std::string> impls;
  for (const auto& j : run.lines)
    if (j.contains("impl")) impls.insert(j.at("impl").get<std::string>());
  CHECK(impls == std::set<std::string>{"wheel", "heap4"});
  CHECK(run_json(std::string(TIMER_BENCH) + " --json --impls wheel,fib_heap").status == 2);
  CHECK(run_json(std::string(TIMER_BENCH) + " --json --impls heap4").status == 2);
}

TEST_CASE("The clock bench prints the cost of the stall-proof stamp against the cached time",
          "[bench][smoke]") {
  const Run run = run_json(std::string(CLOCK_BENCH) + " --calls 100000 --json");
  REQUIRE(run.status == 0);
  REQUIRE(run.lines.size() == 1);
  const auto& j = run.lines[0];
  CHECK(j.at("bench") == "clock");
  for (const char* k : {"cached_uv_now_ns", "loopwheel_now_ns", "hrtime_ns"})
    CHECK(j.at(k).get<double>() > 0);
  CHECK(j.at("ratio_loopwheel_now_to_cached").get<double>() > 0);
}

TEST_CASE("auth bench verifies PyJWT's tokens and reports rates and allocations",
          "[bench][smoke][auth]") {
  const Run run = run_json(std::string(AUTH_BENCH) + " --duration 20ms --json");
  REQUIRE(run.status == 0);
  REQUIRE(run.lines.size() == 1);
  const auto& j = run.lines[0];
  CHECK(j.at("bench") == "auth");
  for (const char* alg : {"hs256", "hs256_minimal", "rs256", "es256"}) {
    INFO(alg);
    CHECK(j.at(alg).at("verifications_per_cpu_second").get<double>() > 0);
    CHECK(j.at(alg).at("verifications_per_wall_second").get<double>() > 0);
    CHECK(j.at(alg).at("token_bytes").get<int>() > 50);
    CHECK(j.at(alg).at("new_calls_per_verification").get<double>() >= 0);
  }
  CHECK(j.at("policy_check").at("checks_per_cpu_second").get<double>() > 0);
  // A permission check allocates nothing.
  CHECK(j.at("policy_check").at("new_calls_per_check").get<double>() == 0);
}

TEST_CASE("The expiring map bench prints each impl, op and N with its ratio, then the targets",
          "[bench][smoke]") {
  const Run run = run_json(std::string(EXPIRING_MAP_BENCH) + " --json --n 2000 --reps 1 --min-ops 5000");
  REQUIRE(run.status == 0);
  std::set<std::string> impls, ops;
  std::size_t targets = 0;
  for (const auto& j : run.lines) {
    REQUIRE(j.at("bench") == "expiring_map");
    if (j.contains("target")) {
      ++targets;
      REQUIRE(j.at("target") == "at_least_as_fast_as_heap");
      REQUIRE(j.at("met").is_boolean());
      REQUIRE(j.at("value").get<double>() > 0);
      continue;
    }
    impls.insert(j.at("impl").get<std::string>());
    ops.insert(j.at("op").get<std::string>());
    REQUIRE(j.at("n") == 2000);
    REQUIRE(j.at("ns_per_op").get<double>() > 0);
    REQUIRE(j.at("median_ns_per_op").get<double>() > 0);
    REQUIRE(j.at("bytes_per_entry").get<double>() > 0);
    REQUIRE(j.at("ratio_vs_expiring_map").get<double>() > 0);
  }
  CHECK(impls == std::set<std::string>{"expiring_map", "heap4", "heap4_lazy"});
  CHECK(ops == std::set<std::string>{"insert", "get_refresh", "expire"});
  CHECK(targets == 3);
}
