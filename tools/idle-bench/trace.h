// trace.h - the synthetic I/O that drives the idle-tracking simulation.
//
// Generated once, before any variant runs, so every variant replays exactly the
// same events and the generator's cost (random numbers, shuffles) is not
// measured. Time advances in steps of 1 ms; each step has a fixed number of
// read and write events, interleaved.
//
// Who gets I/O: reads and writes are two independent streams, each a random
// permutation of the active connections, reshuffled every time it is used up.
// So any active connection reads at least once every 2 read cycles
// (cycle = 1 / reads_per_sec) and writes once every 2 write cycles: with the
// defaults (1 read/s, 0.5 write/s per connection, 10 s idle timeouts) an
// active connection can never legitimately go idle, and a correct tracker
// never closes one. After `warmup`, a random `silent_fraction` of the
// connections stops all I/O: they must be closed by their idle entries.
// A read starts a request with probability `request_fraction` (if none is in
// flight); the connection's next write ends it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heartwheel::bench {

struct TraceConfig {
  std::size_t connections = 1'000'000;
  double reads_per_sec = 1.0;    // per active connection
  double writes_per_sec = 0.5;   // per active connection
  double silent_fraction = 0.1;
  double request_fraction = 0.25;
  std::size_t warmup_ms = 2000;  // then the silent connections stop
  std::size_t steps_ms = 13000;  // total simulated time
  std::uint64_t seed = 1;
};

struct Trace {
  static constexpr std::uint32_t kWrite = 1u << 31;
  static constexpr std::uint32_t kBeginRequest = 1u << 30;  // on reads only
  static constexpr std::uint32_t kConnMask = kBeginRequest - 1;

  std::vector<std::uint32_t> events;     // connection index | flags
  std::vector<std::size_t> step_end;     // events[step_end[s-1] .. step_end[s]) happen in step s
  std::vector<std::uint8_t> silent;      // 1 if the connection goes silent after warmup
  std::size_t silent_count = 0;
  std::size_t reads = 0;
  std::size_t writes = 0;
};

// Throws std::invalid_argument if the configuration cannot keep active
// connections alive or does not fit the event encoding.
Trace make_trace(const TraceConfig& cfg);

}  // namespace heartwheel::bench
