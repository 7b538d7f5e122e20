// sim.h - replays a Trace through one tracker and measures it.
//
// Each 1 ms step: the step's I/O events (timed as "io"), and the tracker's
// timer run (timed as "expiry": wheel.advance or uv_run). libuv runs timers
// before I/O in a loop iteration, LoopWheel after; each tracker says which.
// Setup (opening the connections, arming the first entries) is not timed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "bench_clock.h"
#include "checker.h"
#include "trace.h"
#include "trackers.h"

namespace heartwheel::bench {

struct SimResult {
  std::string impl;
  std::size_t events = 0;
  double io_ns = 0;
  double expiry_ns = 0;
  double bytes_per_connection = 0;
  TrackerCounters counters;
  CheckCounts checks;
  bool checked = true;  // false for the no-timer baseline
};

// Every connection starts as if its last read and write happened at a random
// whole millisecond within one read (write) cycle before the start, as in a
// steady state; the same seed gives every tracker the same start.
inline void init_truth(Checker& chk, const TraceConfig& tc, const SimConfig& sc) {
  std::mt19937_64 rng(tc.seed + 1);
  const auto read_cycle_ms = static_cast<std::uint64_t>(1000.0 / tc.reads_per_sec);
  const auto write_cycle_ms = static_cast<std::uint64_t>(1000.0 / tc.writes_per_sec);
  for (std::size_t c = 0; c < chk.size(); ++c) {
    chk[c] = Truth{};
    chk[c].last_read = sc.start - std::chrono::milliseconds(rng() % (read_cycle_ms + 1));
    chk[c].last_write = sc.start - std::chrono::milliseconds(rng() % (write_cycle_ms + 1));
  }
}

template <class Tracker>
SimResult simulate(const Trace& trace, const TraceConfig& tc, const SimConfig& sc) {
  Checker chk(tc.connections, trace.silent, sc.read_idle, sc.write_idle, sc.request_timeout,
              sc.tick + std::chrono::milliseconds(1));
  init_truth(chk, tc, sc);
  Tracker tracker(tc.connections, sc, chk);
  for (std::size_t c = 0; c < tc.connections; ++c) tracker.open(c, sc.start);

  SimResult r;
  r.impl = Tracker::kName;
  std::uint64_t io_ns = 0, expiry_ns = 0;
  const std::size_t steps = trace.step_end.size() - 1;
  TimePoint now = sc.start;
  for (std::size_t s = 1; s <= steps; ++s) {
    now += std::chrono::milliseconds(1);
    if constexpr (Tracker::kTimersFirst) {
      Stopwatch sw;
      tracker.run_timers(now);
      expiry_ns += sw.elapsed_ns();
    }
    Stopwatch io;
    for (std::size_t i = trace.step_end[s - 1]; i < trace.step_end[s]; ++i) {
      const std::uint32_t ev = trace.events[i];
      const std::size_t c = ev & Trace::kConnMask;
      Truth& t = chk[c];
      if (t.closed) continue;  // only after a wrong close of an active connection
      if (ev & Trace::kWrite) {
        t.last_write = now;
        tracker.on_write(c, now);
        if (t.in_request) {
          t.in_request = false;
          tracker.end_request(c);
        }
      } else {
        t.last_read = now;
        tracker.on_read(c, now);
        if ((ev & Trace::kBeginRequest) && !t.in_request) {
          t.in_request = true;
          t.request_begin = now;
          tracker.begin_request(c, now);
        }
      }
    }
    io_ns += io.elapsed_ns();
    if constexpr (!Tracker::kTimersFirst) {
      Stopwatch sw;
      tracker.run_timers(now);
      expiry_ns += sw.elapsed_ns();
    }
  }
  chk.finish(now);
  r.events = trace.events.size();
  r.io_ns = static_cast<double>(io_ns);
  r.expiry_ns = static_cast<double>(expiry_ns);
  r.bytes_per_connection = Tracker::bytes_per_connection();
  r.counters = tracker.counters();
  r.checks = chk.counts();
  r.checked = std::string(Tracker::kName) != "none";
  return r;
}

}  // namespace heartwheel::bench
