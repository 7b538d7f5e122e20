// heartwheel-rpc-calls-bench: the cost of tracking RPC call deadlines, per
// call (register + answer), with W calls in flight answered in random order
// (replies overtake each other, as with varying service times). No sockets.
//   table     rpc::CallTable: pooled records, an intrusive entry in the
//             timing wheel, the id indexes the pool (no hash map)
//   map+wheel unordered_map id -> heap-allocated record with a wheel entry
//   map+uv    unordered_map id -> pooled record with its own uv_timer_t
//             (libuv's timer heap: what plain libuv code does) - the baseline
// Prints one line per variant and the ratio baseline / table, all measured in
// the same run; --json makes the lines JSON.
#include <heartwheel/common/error.h>
#include <heartwheel/rpc/call_table.h>
#include <heartwheel/timer/virtual_clock.h>
#include <uv.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli_program.h"

using namespace std::chrono_literals;
namespace rpc = heartwheel::rpc;

namespace {

constexpr auto kTimeout = 30s;  // long enough that no call times out in the run

struct Params {
  std::size_t in_flight;
  std::uint64_t calls;
  std::uint64_t seed;
};

// Runs the workload over `Tracker` (start() -> id, complete(id)) and returns
// ns per call. Every 1024 calls the tracker's clock moves 1 ms.
template <class Tracker>
double measure(Tracker& t, const Params& p) {
  std::mt19937_64 rng(p.seed);
  std::vector<std::uint64_t> ids;
  ids.reserve(p.in_flight);
  for (std::size_t i = 0; i < p.in_flight; ++i) ids.push_back(t.start());
  const auto begin = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < p.calls; ++i) {
    auto& slot = ids[rng() % ids.size()];
    t.complete(slot);
    slot = t.start();
    if ((i & 1023) == 1023) t.tick();
  }
  const auto end = std::chrono::steady_clock::now();
  for (auto id : ids) t.complete(id);
  return std::chrono::duration<double, std::nano>(end - begin).count() / static_cast<double>(p.calls);
}

struct TableTracker final : rpc::CallListener {
  heartwheel::ManualTimerService timers{1ms};
  rpc::CallTable table{timers, *this};
  std::uint64_t done = 0;
  void on_call_done(const rpc::CallCompletion&) override { ++done; }
  std::uint64_t start() {
    std::error_code ec;
    return table.start(kTimeout, nullptr, ec);
  }
  void complete(std::uint64_t id) { table.complete(id, {}); }
  void tick() { timers.run_for(1ms); }
};

struct MapWheelTracker {
  struct Call final : heartwheel::TimerEntry {
    Call() : TimerEntry(&fire) {}
    static void fire(TimerEntry&) {}
  };
  heartwheel::ManualTimerService timers{1ms};
  std::unordered_map<std::uint64_t, std::unique_ptr<Call>> calls;
  std::uint64_t next_id = 1;
  std::uint64_t start() {
    auto c = std::make_unique<Call>();
    timers.schedule(*c, kTimeout);
    calls.emplace(next_id, std::move(c));
    return next_id++;
  }
  void complete(std::uint64_t id) {
    auto it = calls.find(id);
    if (it == calls.end()) return;
    timers.cancel(*it->second);
    calls.erase(it);
  }
  void tick() { timers.run_for(1ms); }
};

struct MapUvTracker {
  struct Call {
    uv_timer_t timer;
  };
  uv_loop_t loop;
  std::vector<std::unique_ptr<Call>> pool;
  std::vector<Call*> free;
  std::unordered_map<std::uint64_t, Call*> calls;
  std::uint64_t next_id = 1;
  MapUvTracker() { heartwheel::check_uv(uv_loop_init(&loop), "uv_loop_init"); }
  ~MapUvTracker() {
    for (auto& c : pool) uv_close(reinterpret_cast<uv_handle_t*>(&c->timer), nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  std::uint64_t start() {
    if (free.empty()) {
      pool.push_back(std::make_unique<Call>());
      heartwheel::check_uv(uv_timer_init(&loop, &pool.back()->timer), "uv_timer_init");
      free.push_back(pool.back().get());
    }
    Call* c = free.back();
    free.pop_back();
    uv_timer_start(&c->timer, [](uv_timer_t*) {}, std::chrono::milliseconds(kTimeout).count(), 0);
    calls.emplace(next_id, c);
    return next_id++;
  }
  void complete(std::uint64_t id) {
    auto it = calls.find(id);
    if (it == calls.end()) return;
    uv_timer_stop(&it->second->timer);
    free.push_back(it->second);
    calls.erase(it);
  }
  void tick() { uv_update_time(&loop); }  // deadlines keep moving, as in a live loop
};

void report(bool json, const char* variant, const Params& p, double ns) {
  if (json) {
    std::printf("{\"bench\":\"rpc_calls\",\"variant\":\"%s\",\"in_flight\":%zu,\"calls\":%llu,"
                "\"ns_per_call\":%.1f}\n",
                variant, p.in_flight, static_cast<unsigned long long>(p.calls), ns);
  } else {
    std::printf("%-10s in_flight=%-8zu calls=%-10llu %8.1f ns/call\n", variant, p.in_flight,
                static_cast<unsigned long long>(p.calls), ns);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Params p{10000, 5'000'000, 42};
  bool json = false;
  CLI::App app{
      "heartwheel-rpc-calls-bench: cost per RPC call of tracking its deadline (register + "
      "answer, random reply order), CallTable vs hash map + wheel vs hash map + uv_timer_t.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
      "heartwheel-rpc-calls-bench"};
  app.add_option("--in-flight", p.in_flight, "calls outstanding at any time")->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{10'000'000}));
  app.add_option("--calls", p.calls, "calls measured per variant")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  app.add_option("--seed", p.seed, "random seed for the reply order")->capture_default_str();
  app.add_flag("--json", json, "print JSON lines");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  return heartwheel::cli::run(app, [&] {
    double table_ns, map_wheel_ns, map_uv_ns;
    {
      TableTracker t;
      table_ns = measure(t, p);
      report(json, "table", p, table_ns);
    }
    {
      MapWheelTracker t;
      map_wheel_ns = measure(t, p);
      report(json, "map+wheel", p, map_wheel_ns);
    }
    {
      MapUvTracker t;
      map_uv_ns = measure(t, p);
      report(json, "map+uv", p, map_uv_ns);
    }
    if (json) {
      std::printf(
          "{\"bench\":\"rpc_calls\",\"in_flight\":%zu,\"baseline\":\"map+uv\",\"ratio_baseline_"
          "over_table\":%.2f,"
          "\"ratio_map_wheel_over_table\":%.2f}\n",
          p.in_flight, map_uv_ns / table_ns, map_wheel_ns / table_ns);
    } else {
      std::printf("map+uv / table = %.2f   map+wheel / table = %.2f\n", map_uv_ns / table_ns,
                  map_wheel_ns / table_ns);
    }
    return 0;
  });
}
