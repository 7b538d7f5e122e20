// heartwheel-expiring-map-bench: heartwheel::ExpiringMap against
// std::unordered_map + the 4-ary heap of tools/timer-bench (eager and lazy),
// for insert, get with refresh and mass expiry, on the same keys and
// deadlines under the same virtual clock. See README.md.
#include <CLI/CLI.hpp>
#include <heartwheel/timer/expiring_map.h>
#include <heartwheel/timer/virtual_clock.h>
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.h"
#include "bench_clock.h"
#include "cli_program.h"
#include "heap_map.h"

namespace hb = heartwheel::bench;
using heartwheel::Duration;
using heartwheel::TimePoint;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

struct Config {
  std::vector<std::size_t> sizes;
  std::uint64_t timeout_ns = 30'000 * kMs;  // write ttl, access ttl, expiry offset
  std::uint64_t window_ns = 1'000 * kMs;    // expiry: deadlines spread over this
  std::size_t batch = 1000;                 // operations per virtual millisecond
  std::size_t min_ops = 2'000'000;          // get_refresh: at least this many gets
  int reps = 3;
  std::uint64_t seed = 42;
  bool json = false;
};

struct Sample {
  double ns_per_op = 0;
  double bytes_per_entry = 0;  // insert only
};

struct Row {
  std::string impl, op;
  std::size_t n = 0;
  double ns_per_op = 0, median_ns_per_op = 0, bytes_per_entry = 0, ratio = 1;
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// What the allocator holds: small blocks, and the large ones it mmaps (the
// bucket arrays and the heap's array, above the mmap threshold).
std::size_t heap_bytes() {
  const auto m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// The thread's CPU time (default) or wall time: on a machine shared with
// other builds, wall time also counts the time slices other processes got.
bool g_wall_clock = false;
std::uint64_t elapsed_clock_ns() {
  if (g_wall_clock) return hb::wall_ns();
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}
class Stopwatch {
 public:
  std::uint64_t elapsed_ns() const { return elapsed_clock_ns() - start_; }

 private:
  std::uint64_t start_ = elapsed_clock_ns();
};

// Insert and expire run over all N keys this many times (fresh maps), so
// that a measurement covers at least min_ops operations at small N.
std::size_t rounds_for(std::size_t n, const Config& c) { return n >= c.min_ops ? 1 : (c.min_ops + n - 1) / n; }

// The same keys, order and deadlines for every implementation.
struct Workload {
  std::vector<std::uint64_t> keys;    // N distinct random keys
  std::vector<std::uint32_t> order;   // a shuffled order of the keys, for gets
  std::vector<std::uint64_t> jitter;  // expiry: each key's offset in the window
};

Workload make_workload(std::size_t n, const Config& c) {
  Workload w;
  w.keys.resize(n);
  for (std::size_t i = 0; i < n; ++i) w.keys[i] = mix(c.seed * 0x100000001ull + i);
  w.order.resize(n);
  for (std::size_t i = 0; i < n; ++i) w.order[i] = static_cast<std::uint32_t>(i);
  std::mt19937_64 rng(c.seed);
  std::shuffle(w.order.begin(), w.order.end(), rng);
  w.jitter.resize(n);
  for (std::size_t i = 0; i < n; ++i) w.jitter[i] = mix(~i) % c.window_ns;
  return w;
}

// ExpiringMap on a ManualTimerService (tick 1 ms): the clock moves 1 ms per
// batch through run_for(), which runs the wheel as a loop would.
struct WheelSide {
  static constexpr const char* kName = "expiring_map";
  using Map = heartwheel::ExpiringMap<std::uint64_t, std::uint64_t>;

  explicit WheelSide(const Config& c) : cfg(c), timers(std::chrono::milliseconds(1), start()) {}
  static TimePoint start() { return TimePoint(Duration(1000 * 1000 * kMs)); }  // 1000 s
  std::unique_ptr<Map> make(Map::Options o) { return std::make_unique<Map>(timers, std::move(o)); }
  Duration ttl() const { return Duration(static_cast<Duration::rep>(cfg.timeout_ns)); }
  void step() { timers.run_for(std::chrono::milliseconds(1)); }
  std::size_t rounds(const Workload& w) const { return rounds_for(w.keys.size(), cfg); }

  Sample insert(const Workload& w) {
    double ns = 0, bytes = 0;
    for (std::size_t r = 0; r < rounds(w); ++r) {
      auto map = make({.expire_after_write = ttl()});
      const std::size_t before = heap_bytes();
      Stopwatch sw;
      for (std::size_t i = 0, left = 0; i < w.keys.size(); ++i, --left) {
        if (left == 0) {
          step();
          left = cfg.batch;
        }
        map->insert(w.keys[i], i);
      }
      ns += static_cast<double>(sw.elapsed_ns());
      if (r == 0) bytes = static_cast<double>(heap_bytes() - before) / static_cast<double>(w.keys.size());
    }
    return {ns / static_cast<double>(rounds(w) * w.keys.size()), bytes};
  }

  Sample get_refresh(const Workload& w) {
    auto map = make({.expire_after_access = ttl()});
    for (std::size_t i = 0; i < w.keys.size(); ++i) map->insert(w.keys[i], i);
    const std::size_t ops = std::max(w.keys.size(), cfg.min_ops);
    std::uint64_t sum = 0;
    Stopwatch sw;
    for (std::size_t k = 0, at = 0, left = 0; k < ops; ++k, --left) {
      if (left == 0) {
        step();
        left = cfg.batch;
      }
      sum += *map->get(w.keys[w.order[at]]);
      if (++at == w.keys.size()) at = 0;
    }
    const double ns = static_cast<double>(sw.elapsed_ns());
    sink += sum;
    return {ns / static_cast<double>(ops)};
  }

  Sample expire(const Workload& w) {
    double ns = 0;
    for (std::size_t r = 0; r < rounds(w); ++r) {
      auto map = make({});
      for (std::size_t i = 0; i < w.keys.size(); ++i)
        map->insert(w.keys[i], i, ttl() + Duration(static_cast<Duration::rep>(w.jitter[i])));
      // Time jumps to the window (as a loop woken at the first deadline), then
      // steps 1 ms at a time through it; every call is timed.
      const Duration first = ttl() - std::chrono::milliseconds(1);
      Stopwatch sw;
      timers.run_for(first);
      for (std::uint64_t t = 0; t <= cfg.window_ns + kMs; t += kMs) step();
      ns += static_cast<double>(sw.elapsed_ns());
      if (!map->empty())
        throw std::logic_error("expiring_map: " + std::to_string(map->size()) + " entries left after the window");
    }
    return {ns / static_cast<double>(rounds(w) * w.keys.size())};
  }

  const Config& cfg;
  heartwheel::ManualTimerService timers;
  std::uint64_t sink = 0;
};

// HeapMap on the same kind of clock: it reads a VirtualClock through the
// TimerClock interface (as the wheel map does through its TimerService) and
// runs its expiry once per virtual millisecond.
struct HeapSide {
  HeapSide(const Config& c, bool lazy_refresh) : cfg(c), lazy(lazy_refresh), clock(WheelSide::start()) {}
  const char* name() const { return lazy ? "heap4_lazy" : "heap4"; }
  std::uint64_t now() const {
    return static_cast<std::uint64_t>(static_cast<const heartwheel::TimerClock&>(clock).now().time_since_epoch().count());
  }
  std::size_t rounds(const Workload& w) const { return rounds_for(w.keys.size(), cfg); }
  void step(hb::HeapMap& m) {
    clock.advance(std::chrono::milliseconds(1));
    m.expire(now());
  }

  Sample insert(const Workload& w) {
    double ns = 0, bytes = 0;
    for (std::size_t r = 0; r < rounds(w); ++r) {
      auto map = std::make_unique<hb::HeapMap>(lazy, cfg.timeout_ns);
      const std::size_t before = heap_bytes();
      Stopwatch sw;
      for (std::size_t i = 0, left = 0; i < w.keys.size(); ++i, --left) {
        if (left == 0) {
          step(*map);
          left = cfg.batch;
        }
        map->insert(w.keys[i], i, now(), cfg.timeout_ns);
      }
      ns += static_cast<double>(sw.elapsed_ns());
      if (r == 0) bytes = static_cast<double>(heap_bytes() - before) / static_cast<double>(w.keys.size());
    }
    return {ns / static_cast<double>(rounds(w) * w.keys.size()), bytes};
  }

  Sample get_refresh(const Workload& w) {
    auto map = std::make_unique<hb::HeapMap>(lazy, cfg.timeout_ns);
    for (std::size_t i = 0; i < w.keys.size(); ++i) map->insert(w.keys[i], i, now(), cfg.timeout_ns);
    const std::size_t ops = std::max(w.keys.size(), cfg.min_ops);
    std::uint64_t sum = 0;
    Stopwatch sw;
    for (std::size_t k = 0, at = 0, left = 0; k < ops; ++k, --left) {
      if (left == 0) {
        step(*map);
        left = cfg.batch;
      }
      sum += *map->get(w.keys[w.order[at]], now());
      if (++at == w.keys.size()) at = 0;
    }
    const double ns = static_cast<double>(sw.elapsed_ns());
    sink += sum;
    return {ns / static_cast<double>(ops)};
  }

  Sample expire(const Workload& w) {
    double ns = 0;
    for (std::size_t r = 0; r < rounds(w); ++r) {
      auto map = std::make_unique<hb::HeapMap>(lazy, cfg.timeout_ns);
      for (std::size_t i = 0; i < w.keys.size(); ++i)
        map->insert(w.keys[i], i, now(), cfg.timeout_ns + w.jitter[i]);
      Stopwatch sw;
      clock.advance(Duration(static_cast<Duration::rep>(cfg.timeout_ns - kMs)));
      map->expire(now());
      for (std::uint64_t t = 0; t <= cfg.window_ns + kMs; t += kMs) step(*map);
      ns += static_cast<double>(sw.elapsed_ns());
      if (map->size() != 0)
        throw std::logic_error(std::string(name()) + ": " + std::to_string(map->size()) + " entries left after the window");
    }
    return {ns / static_cast<double>(rounds(w) * w.keys.size())};
  }

  const Config& cfg;
  bool lazy;
  heartwheel::VirtualClock clock;
  std::uint64_t sink = 0;
};

// Each operation `reps` times, interleaved with the other implementations'
// (so a noisy moment hits all of them); the best repetition is reported, the
// median kept beside it.
template <class Side>
void measure(Side& side, const Workload& w, std::vector<std::vector<Sample>>& out) {
  out[0].push_back(side.insert(w));
  out[1].push_back(side.get_refresh(w));
  out[2].push_back(side.expire(w));
}

const char* const kOps[] = {"insert", "get_refresh", "expire"};

void run_size(const Config& c, std::size_t n, std::vector<Row>& rows) {
  const Workload w = make_workload(n, c);
  WheelSide wheel(c);
  HeapSide eager(c, false), lazy(c, true);
  std::vector<std::vector<Sample>> s_wheel(3), s_eager(3), s_lazy(3);
  for (int r = 0; r < c.reps; ++r) {
    measure(wheel, w, s_wheel);
    measure(eager, w, s_eager);
    measure(lazy, w, s_lazy);
  }
  auto add = [&](const char* impl, std::vector<std::vector<Sample>>& s) {
    for (int op = 0; op < 3; ++op) {
      std::vector<double> ns;
      for (const auto& x : s[op]) ns.push_back(x.ns_per_op);
      Row row{impl, kOps[op], n};
      row.ns_per_op = *std::min_element(ns.begin(), ns.end());
      row.median_ns_per_op = hb::median(ns);
      std::vector<double> bytes;
      for (const auto& x : s[0]) bytes.push_back(x.bytes_per_entry);
      row.bytes_per_entry = hb::median(bytes);
      rows.push_back(row);
    }
  };
  add(WheelSide::kName, s_wheel);
  add("heap4", s_eager);
  add("heap4_lazy", s_lazy);
  if (wheel.sink + eager.sink + lazy.sink == 42) std::fprintf(stderr, " ");  // keep the sums alive
}

const Row* find(const std::vector<Row>& rows, const std::string& impl, const std::string& op, std::size_t n) {
  for (const auto& r : rows)
    if (r.impl == impl && r.op == op && r.n == n) return &r;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ExpiringMap (a hash map on the timing wheel) against std::unordered_map + a 4-ary heap: "
               "insert, get with refresh and mass expiry, ns per operation.\n"
               "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
               "heartwheel-expiring-map-bench"};
  Config c;
  std::string sizes = "100k,1M";
  bool quick = false;
  app.add_option("--n", sizes, "Comma-separated numbers of entries, e.g. 100k,1M")->capture_default_str();
  app.add_flag("--quick", quick, "N = 1M only, one repetition");
  app.add_flag("--json", c.json, "Print JSON lines (one per impl, op and N, then the targets) instead of a table");
  app.add_option("--reps", c.reps, "Repetitions of each measurement; the best is reported (and the median in JSON)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--min-ops", c.min_ops, "At least this many operations per measurement (rounds over the keys)")
      ->capture_default_str()->check(CLI::Range(1, 1'000'000'000));
  app.add_option("--seed", c.seed, "Seed of the keys and their order")->capture_default_str();
  std::string clock = "cpu";
  app.add_option("--clock", clock, "What is timed: cpu (this thread's CPU time) or wall")
      ->check(CLI::IsMember({"cpu", "wall"}))->capture_default_str();
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  g_wall_clock = clock == "wall";
  try {
    if (quick) {
      if (app.count("--n") == 0) sizes = "1M";
      if (app.count("--reps") == 0) c.reps = 1;
    }
    c.sizes = hb::parse_count_list(sizes);
    for (std::size_t n : c.sizes)
      if (n >= UINT32_MAX) throw std::invalid_argument("--n: at most 4 billion entries");
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  std::vector<Row> rows;
  try {
    for (std::size_t n : c.sizes) {
      run_size(c, n, rows);
      if (!c.json) std::fprintf(stderr, "  N = %zu done\n", n);
    }
  } catch (const std::exception& e) {
    return heartwheel::cli::failure(app, e.what());
  }
  for (auto& r : rows)
    if (const Row* base = find(rows, WheelSide::kName, r.op, r.n)) r.ratio = r.ns_per_op / base->ns_per_op;

  // The goal: at least as fast as the heap version on every row, the
  // stronger of the two heaps counting.
  struct Verdict {
    std::string op;
    std::size_t n;
    bool met;
    double ratio;
  };
  std::vector<Verdict> verdicts;
  for (std::size_t n : c.sizes)
    for (const char* op : kOps) {
      const Row* e = find(rows, "heap4", op, n);
      const Row* l = find(rows, "heap4_lazy", op, n);
      const double best = std::min(e->ratio, l->ratio);
      verdicts.push_back({op, n, best >= 1.0, best});
    }

  if (c.json) {
    for (const auto& r : rows)
      std::cout << nlohmann::json{{"bench", "expiring_map"}, {"impl", r.impl}, {"op", r.op}, {"n", r.n},
                                  {"ns_per_op", r.ns_per_op}, {"median_ns_per_op", r.median_ns_per_op},
                                  {"bytes_per_entry", r.bytes_per_entry}, {"ratio_vs_expiring_map", r.ratio},
                                  {"clock", g_wall_clock ? "wall" : "cpu"}}
                       .dump()
                << '\n';
    for (const auto& v : verdicts)
      std::cout << nlohmann::json{{"bench", "expiring_map"}, {"target", "at_least_as_fast_as_heap"}, {"op", v.op},
                                  {"n", v.n}, {"met", v.met}, {"value", v.ratio},
                                  {"loadavg_1m", hb::load_average_1m()}}
                       .dump()
                << '\n';
    return 0;
  }
  std::printf("heartwheel-expiring-map-bench: ns per operation (%s time, best of %d), virtual time 1 ms per %zu ops,\n"
              "ttl %.0f s, wheel tick 1 ms. (x) = ratio to expiring_map; higher is slower than it.\n\n",
              g_wall_clock ? "wall" : "CPU", c.reps, c.batch, double(c.timeout_ns) / 1e9);
  std::printf("%-12s %9s | %12s | %9s %7s | %10s %7s\n", "op", "N", "expiring_map", "heap4", "(x)", "heap4_lazy", "(x)");
  for (std::size_t n : c.sizes) {
    for (const char* op : kOps) {
      const Row* w = find(rows, WheelSide::kName, op, n);
      const Row* e = find(rows, "heap4", op, n);
      const Row* l = find(rows, "heap4_lazy", op, n);
      std::printf("%-12s %9zu | %12.1f | %9.1f %6.2fx | %10.1f %6.2fx\n", op, n, w->ns_per_op, e->ns_per_op, e->ratio,
                  l->ns_per_op, l->ratio);
    }
    std::printf("%-12s %9zu | %12.1f | %9.1f %7s | %10.1f\n\n", "bytes/entry", n,
                find(rows, WheelSide::kName, "insert", n)->bytes_per_entry, find(rows, "heap4", "insert", n)->bytes_per_entry,
                "", find(rows, "heap4_lazy", "insert", n)->bytes_per_entry);
  }
  std::printf("Target: at least as fast as the faster heap on every row (1-minute load average %.2f on %u cores):\n",
              hb::load_average_1m(), std::thread::hardware_concurrency());
  for (const auto& v : verdicts)
    std::printf("  %-12s N = %-9zu %-7s (heap / expiring_map = %.2f)\n", v.op.c_str(), v.n, v.met ? "MET" : "NOT MET",
                v.ratio);
  return 0;
}
