// heartwheel-clock-bench: what a stall-proof activity stamp costs.
//
// Every read on a connection stamps the time it was seen (lazy refresh: that
// store is the whole cost of idle tracking on the I/O path). The stamp reads
// LoopWheel::now(): libuv's cached loop time, or the monotonic clock
// when the cached time went stale (a long turn, a stall) (loop_wheel.h, "Stalls").
// This measures, per call and in one run: the cached time alone (what the
// stamp cost before it was made stall-proof), LoopWheel::now(), and a full
// CLOCK_MONOTONIC read (uv_hrtime, the obvious alternative). Prints the
// ratios to the cached read.
#include <heartwheel/common/error.h>
#include <heartwheel/timer/loop_wheel.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench_clock.h"
#include "cli_program.h"

namespace {

using heartwheel::bench::wall_ns;

template <class F>
double ns_per_call(std::uint64_t calls, F&& f) {
  std::int64_t sink = 0;
  const std::uint64_t t0 = wall_ns();
  for (std::uint64_t i = 0; i < calls; ++i) sink += f();
  const std::uint64_t t1 = wall_ns();
  if (sink == 42) std::puts("");  // keeps the loop
  return static_cast<double>(t1 - t0) / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t calls = 20'000'000;
  bool json = false;
  CLI::App app{"heartwheel-clock-bench: cost per call of the activity stamp (LoopWheel::now) "
               "against libuv's cached time and a full CLOCK_MONOTONIC read.\n"
               "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
               "heartwheel-clock-bench"};
  app.add_option("--calls", calls, "calls per measurement (>= 1000)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 40));
  app.add_flag("--json", json, "print one JSON line");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  return heartwheel::cli::run(app, [&] {
    uv_loop_t loop;
    heartwheel::check_uv(uv_loop_init(&loop), "uv_loop_init");
    double cached = 0, stamp = 0, hr = 0;
    {
      heartwheel::LoopWheel wheel(&loop);
      for (int round = 0; round < 2; ++round) {  // the first round warms up
        cached = ns_per_call(calls, [&] {
          return heartwheel::from_uv_millis(uv_now(&loop)).time_since_epoch().count();
        });
        stamp = ns_per_call(calls, [&] { return wheel.now().time_since_epoch().count(); });
        hr = ns_per_call(calls, [] { return static_cast<std::int64_t>(uv_hrtime()); });
      }
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    if (json) {
      nlohmann::json j = {{"bench", "clock"},
                          {"calls", calls},
                          {"cached_uv_now_ns", cached},
                          {"loopwheel_now_ns", stamp},
                          {"hrtime_ns", hr},
                          {"ratio_loopwheel_now_to_cached", stamp / cached},
                          {"ratio_hrtime_to_cached", hr / cached},
                          {"load_average_1m", heartwheel::bench::load_average_1m()}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("uv_now (cached, stale in a stall): %.1f ns\n", cached);
      std::printf("LoopWheel::now (stall-proof):     %.1f ns (%.1fx)\n", stamp, stamp / cached);
      std::printf("uv_hrtime (CLOCK_MONOTONIC):       %.1f ns (%.1fx)\n", hr, hr / cached);
    }
    return 0;
  });
}
