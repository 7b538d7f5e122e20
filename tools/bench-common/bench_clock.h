// bench_clock.h - wall-clock timing and a virtual clock that libuv also reads.
//
// The benchmarks compare the wheel with real libuv timers under the same
// virtual time (1 ms per batch of operations, tens of seconds of simulated
// traffic in a fraction of that). libuv has no public way to run its timers at
// a chosen time: uv_run() and uv_update_time() always read CLOCK_MONOTONIC
// (or CLOCK_MONOTONIC_COARSE). So bench_clock.cpp defines clock_gettime() in
// the executable, which the dynamic linker binds libuv.so's calls to (symbol
// interposition, as libfaketime does). While the virtual clock is enabled,
// those two clocks read the virtual time; all other clocks, and both when it is
// disabled, pass through to the C library. libuv itself runs unmodified:
// its heap, uv_timer_start/stop and uv_run's timer phase are the real code.
//
// wall_ns() always reads the real monotonic clock, for measuring.
// Threads: the benchmarks are single-threaded; the switch is not synchronised.
#pragma once

#include <cstdint>

#include <uv.h>

namespace heartwheel::bench {

// Real monotonic time in nanoseconds, whatever the virtual clock does.
std::uint64_t wall_ns() noexcept;

// From now on CLOCK_MONOTONIC(_COARSE) reads `ns` (nanoseconds), until disabled.
void virtual_clock_set(std::uint64_t ns) noexcept;
void virtual_clock_disable() noexcept;
bool virtual_clock_enabled() noexcept;

// True if `loop`'s time follows the virtual clock, i.e. the interposition
// works in this executable. Leaves the loop's time at the virtual time.
bool libuv_reads_virtual_clock(uv_loop_t* loop) noexcept;

// The 1-minute load average (0 if unknown): printed with every result,
// because other processes on a shared machine inflate the figures.
double load_average_1m() noexcept;

// Measures a stretch of code with wall_ns().
class Stopwatch {
 public:
  Stopwatch() noexcept : start_(wall_ns()) {}
  std::uint64_t elapsed_ns() const noexcept { return wall_ns() - start_; }

 private:
  std::uint64_t start_;
};

}  // namespace heartwheel::bench
