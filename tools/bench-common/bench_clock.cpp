// The clock_gettime() interposer behind bench_clock.h. It must be linked into
// the executable (not a shared library) so that it precedes libc in the
// dynamic linker's lookup order; the benchmarks reference the functions below,
// which pulls this object out of the static helper library.
#include "bench_clock.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

namespace {
bool g_enabled = false;
std::uint64_t g_virtual_ns = 0;

using ClockGettime = int (*)(clockid_t, timespec*);

ClockGettime real_clock_gettime() noexcept {
  static const ClockGettime real =
      reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
  return real;
}
}  // namespace

extern "C" int clock_gettime(clockid_t id, timespec* ts) noexcept {
  if (g_enabled && (id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE)) {
    ts->tv_sec = static_cast<time_t>(g_virtual_ns / 1'000'000'000);
    ts->tv_nsec = static_cast<long>(g_virtual_ns % 1'000'000'000);
    return 0;
  }
  return real_clock_gettime()(id, ts);
}

namespace heartwheel::bench {

std::uint64_t wall_ns() noexcept {
  timespec ts{};
  real_clock_gettime()(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

void virtual_clock_set(std::uint64_t ns) noexcept {
  g_virtual_ns = ns;
  g_enabled = true;
}

void virtual_clock_disable() noexcept { g_enabled = false; }
bool virtual_clock_enabled() noexcept { return g_enabled; }

double load_average_1m() noexcept {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : 0;
}

bool libuv_reads_virtual_clock(uv_loop_t* loop) noexcept {
  if (!g_enabled) return false;
  const std::uint64_t saved = g_virtual_ns;
  g_virtual_ns = saved + 7'000'000;  // a value the real clock would not give now
  uv_update_time(loop);
  const bool follows = uv_now(loop) == g_virtual_ns / 1'000'000;
  g_virtual_ns = saved;
  uv_update_time(loop);
  return follows && uv_now(loop) == saved / 1'000'000;
}

}  // namespace heartwheel::bench
