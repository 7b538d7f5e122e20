// heartwheel-idle-bench: a simulation of many virtual connections, each with
// read-idle, write-idle and request timers in ONE tracker, driven by synthetic
// I/O. Compares lazy refresh, eager reschedule (both on the wheel) and one
// uv_timer_t per timer, and checks every close against the ground truth.
// See README.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.h"
#include "cli_program.h"
#include "sim.h"

namespace hb = heartwheel::bench;

namespace {

struct Derived {
  double io_ns_per_event, tracking_io_ns_per_event, expiry_ns_per_event, tracking_ns_per_event;
  double total_ms, ops_per_sec;
};

Derived derive(const hb::SimResult& r, const hb::SimResult& none) {
  const double ev = static_cast<double>(r.events);
  Derived d{};
  d.io_ns_per_event = r.io_ns / ev;
  d.tracking_io_ns_per_event = (r.io_ns - none.io_ns) / ev;
  d.expiry_ns_per_event = r.expiry_ns / ev;
  d.tracking_ns_per_event = d.tracking_io_ns_per_event + (r.expiry_ns - none.expiry_ns) / ev;
  d.total_ms = (r.io_ns + r.expiry_ns) / 1e6;
  const double ops = static_cast<double>(r.counters.timer_ops + r.counters.fires);
  d.ops_per_sec = d.total_ms > 0 ? ops / (d.total_ms / 1e3) : 0;
  return d;
}

const hb::SimResult* find(const std::vector<hb::SimResult>& rs, const std::string& impl) {
  for (const auto& r : rs)
    if (r.impl == impl) return &r;
  return nullptr;
}

// The faster correct wheel mode, by tracking cost per I/O event including expiry.
std::string conclusion(const std::vector<hb::SimResult>& rs) {
  const auto* none = find(rs, "none");
  const auto* lazy = find(rs, "wheel_lazy");
  const auto* eager = find(rs, "wheel_eager");
  if (!none || !lazy || !eager) return "";
  const bool lazy_ok = lazy->checks.errors() == 0, eager_ok = eager->checks.errors() == 0;
  if (!lazy_ok && !eager_ok) return "none (both wheel modes failed the correctness check)";
  if (!lazy_ok) return "wheel_eager";
  if (!eager_ok) return "wheel_lazy";
  return derive(*lazy, *none).tracking_ns_per_event <= derive(*eager, *none).tracking_ns_per_event ? "wheel_lazy"
                                                                                                     : "wheel_eager";
}

nlohmann::json to_json(const hb::SimResult& r, const std::vector<hb::SimResult>& rs, const hb::Trace& trace,
                       std::size_t connections) {
  const auto& none = *find(rs, "none");
  const Derived d = derive(r, none);
  nlohmann::json j{{"bench", "idle"},
                   {"impl", r.impl},
                   {"connections", connections},
                   {"events", r.events},
                   {"io_ns_per_event", d.io_ns_per_event},
                   {"tracking_io_ns_per_event", d.tracking_io_ns_per_event},
                   {"expiry_ns_per_event", d.expiry_ns_per_event},
                   {"tracking_ns_per_event", d.tracking_ns_per_event},
                   {"expiry_ms", r.expiry_ns / 1e6},
                   {"total_ms", d.total_ms},
                   {"timer_ops", r.counters.timer_ops},
                   {"fires", r.counters.fires},
                   {"rearms", r.counters.rearms},
                   {"ops_per_sec", d.ops_per_sec},
                   {"bytes_per_connection", r.bytes_per_connection}};
  for (const char* base : {"wheel_eager", "uv_timer"}) {
    const auto* b = find(rs, base);
    if (r.checked && b) j[std::string("ratio_vs_") + (base[0] == 'w' ? "eager" : "uv")] =
        d.tracking_ns_per_event / derive(*b, none).tracking_ns_per_event;
  }
  if (r.checked) {
    const auto& c = r.checks;
    j["correct"] = c.errors() == 0;
    j["silent"] = trace.silent_count;
    j["closed_silent"] = c.closed_silent;
    j["closed_active"] = c.closed_active;
    j["early"] = c.early;
    j["late"] = c.late;
    j["missed"] = c.missed;
    j["stale_request"] = c.stale_request;
    j["request_timeouts"] = c.request_timeouts;
    j["max_lateness_ms"] = std::chrono::duration<double, std::milli>(c.max_lateness).count();
  } else {
    j["correct"] = nullptr;  // the baseline tracks nothing
  }
  return j;
}

void print_table(const std::vector<hb::SimResult>& rs, const hb::Trace& trace, const hb::TraceConfig& tc,
                 const hb::SimConfig& sc) {
  auto sec = [](heartwheel::Duration d) { return std::chrono::duration<double>(d).count(); };
  std::printf("heartwheel-idle-bench: %zu connections x 3 timers, %zu I/O events over %.1f s of virtual time\n"
              "(%.2g reads + %.2g writes /s per connection), %zu go silent after %.1f s; read idle %.0f s,\n"
              "write idle %.0f s, request timeout %.0f s, wheel tick %g ms. Costs are per I/O event;\n"
              "'tracking' = this row minus the no-timer baseline (io + expiry).\n\n",
              tc.connections, trace.events.size(), double(tc.steps_ms) / 1e3, tc.reads_per_sec, tc.writes_per_sec,
              trace.silent_count, double(tc.warmup_ms) / 1e3, sec(sc.read_idle), sec(sc.write_idle),
              sec(sc.request_timeout), std::chrono::duration<double, std::milli>(sc.tick).count());
  std::printf("%-12s %8s %9s %9s %9s | %9s %9s | %8s %8s %11s %7s | %s\n", "impl", "io ns", "track io", "expiry",
              "tracking", "vs eager", "vs uv", "total ms", "fires", "rearms", "B/conn", "correctness");
  const auto& none = *find(rs, "none");
  for (const auto& r : rs) {
    const Derived d = derive(r, none);
    std::printf("%-12s %8.2f %9.2f %9.2f %9.2f |", r.impl.c_str(), d.io_ns_per_event, d.tracking_io_ns_per_event,
                d.expiry_ns_per_event, d.tracking_ns_per_event);
    const auto* eager = find(rs, "wheel_eager");
    const auto* uv = find(rs, "uv_timer");
    if (r.checked && eager && uv)
      std::printf(" %8.2fx %8.3fx |", d.tracking_ns_per_event / derive(*eager, none).tracking_ns_per_event,
                  d.tracking_ns_per_event / derive(*uv, none).tracking_ns_per_event);
    else
      std::printf(" %9s %9s |", "-", "-");
    std::printf(" %8.0f %8llu %11llu %7.0f | ", d.total_ms, static_cast<unsigned long long>(r.counters.fires),
                static_cast<unsigned long long>(r.counters.rearms), r.bytes_per_connection);
    if (!r.checked) {
      std::printf("baseline (no timers)\n");
      continue;
    }
    const auto& c = r.checks;
    std::printf("%s: silent closed %zu/%zu, active closed %zu, early %zu, late %zu, missed %zu, "
                "request timeouts %zu, max late %.1f ms\n",
                c.errors() == 0 ? "OK" : "WRONG", c.closed_silent, trace.silent_count, c.closed_active, c.early,
                c.late, c.missed, c.request_timeouts, std::chrono::duration<double, std::milli>(c.max_lateness).count());
  }
  std::printf("\nFaster default for the wheel (lower tracking cost, correct): %s\n", conclusion(rs).c_str());
  std::printf("1-minute load average at the end: %.2f on %u cores\n", hb::load_average_1m(),
              std::thread::hardware_concurrency());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Simulates many virtual connections with read-idle, write-idle and request timers in one "
      "tracker,\n"
      "driven by synthetic I/O: lazy refresh vs eager reschedule on the wheel vs one uv_timer_t "
      "per timer.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error, 3 a tracker failed its correctness "
      "check.",
      "heartwheel-idle-bench"};
  hb::TraceConfig tc;
  hb::SimConfig sc;
  std::string connections = "1M", read_idle = "10s", write_idle = "10s", request_timeout = "5s", tick = "10ms";
  std::string warmup = "2s";
  bool quick = false, json = false;
  std::string only;
  app.add_option("--connections", connections, "Virtual connections, e.g. 100k or 1M")->capture_default_str();
  app.add_flag("--quick", quick, "Demo mode, under 30 s: 100k connections unless --connections is given");
  app.add_flag("--json", json, "Print JSON lines (one per tracker, then the conclusion) instead of a table");
  app.add_option("--read-idle", read_idle, "Read-idle timeout, e.g. 10s")->capture_default_str();
  app.add_option("--write-idle", write_idle, "Write-idle timeout, e.g. 10s")->capture_default_str();
  app.add_option("--request-timeout", request_timeout, "Request timeout, e.g. 5s")->capture_default_str();
  app.add_option("--tick", tick, "Wheel tick (LoopWheel's default is 10ms)")->capture_default_str();
  app.add_option("--reads-per-sec", tc.reads_per_sec, "Reads per second per active connection")->capture_default_str();
  app.add_option("--writes-per-sec", tc.writes_per_sec, "Writes per second per active connection")->capture_default_str();
  app.add_option("--silent-fraction", tc.silent_fraction, "Fraction of connections that go silent after the warm-up")
      ->capture_default_str()->check(CLI::Range(0.0, 0.99));
  app.add_option("--request-fraction", tc.request_fraction, "Probability that a read starts a request")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--warmup", warmup, "Virtual time before the silent connections stop, e.g. 2s")->capture_default_str();
  app.add_option("--only", only, "Run only this tracker besides the baseline: wheel_lazy, wheel_eager or uv_timer");
  app.add_option("--seed", tc.seed, "Seed of the synthetic traffic")->capture_default_str();
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  hb::Trace trace;
  try {
    if (quick && app.count("--connections") == 0) connections = "100k";
    tc.connections = hb::parse_count(connections);
    sc.read_idle = hb::parse_duration(read_idle);
    sc.write_idle = hb::parse_duration(write_idle);
    sc.request_timeout = hb::parse_duration(request_timeout);
    sc.tick = hb::parse_duration(tick);
    const auto warm = hb::parse_duration(warmup);
    if (sc.tick < std::chrono::milliseconds(1)) throw std::invalid_argument("--tick must be at least 1ms");
    for (auto d : {sc.read_idle, sc.write_idle, sc.request_timeout})
      if (d < std::chrono::milliseconds(1)) throw std::invalid_argument("timeouts must be at least 1ms");
    if (!only.empty() && only != "wheel_lazy" && only != "wheel_eager" && only != "uv_timer")
      throw std::invalid_argument("--only must be wheel_lazy, wheel_eager or uv_timer");
    // Long enough for every silent connection to reach its idle timeout, plus a second.
    tc.warmup_ms = static_cast<std::size_t>(std::chrono::duration_cast<std::chrono::milliseconds>(warm).count());
    const auto longest = std::max(sc.read_idle, sc.write_idle);
    tc.steps_ms = tc.warmup_ms +
                  static_cast<std::size_t>(std::chrono::duration_cast<std::chrono::milliseconds>(longest).count()) +
                  1000 + static_cast<std::size_t>(std::chrono::duration_cast<std::chrono::milliseconds>(sc.tick).count());
    if (2.0 / tc.reads_per_sec >= std::chrono::duration<double>(sc.read_idle).count() ||
        2.0 / tc.writes_per_sec >= std::chrono::duration<double>(sc.write_idle).count())
      throw std::invalid_argument("I/O too sparse: active connections could go idle (need 2 / rate < idle timeout)");
    trace = hb::make_trace(tc);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  std::vector<hb::SimResult> rs;
  try {
    rs.push_back(hb::simulate<hb::NoTracker>(trace, tc, sc));
    if (only.empty() || only == "wheel_lazy") rs.push_back(hb::simulate<hb::WheelTracker<true>>(trace, tc, sc));
    if (only.empty() || only == "wheel_eager") rs.push_back(hb::simulate<hb::WheelTracker<false>>(trace, tc, sc));
    if (only.empty() || only == "uv_timer") rs.push_back(hb::simulate<hb::UvTracker>(trace, tc, sc));
  } catch (const std::exception& e) {
    return heartwheel::cli::failure(app, e.what());
  }

  bool all_correct = true;
  for (const auto& r : rs)
    if (r.checked && r.checks.errors() != 0) all_correct = false;
  if (json) {
    for (const auto& r : rs) std::cout << to_json(r, rs, trace, tc.connections).dump() << '\n';
    const std::string winner = conclusion(rs);
    if (!winner.empty())
      std::cout << nlohmann::json{{"bench", "idle"}, {"conclusion", "faster_default"}, {"impl", winner},
                                  {"all_correct", all_correct},
                                  {"loadavg_1m", hb::load_average_1m()}}.dump()
                << '\n';
  } else {
    print_table(rs, trace, tc, sc);
  }
  return all_correct ? 0 : 3;
}
