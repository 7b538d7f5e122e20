// Private: a per-thread xorshift generator for jitter. Not for anything that
// needs unpredictability; it spreads deadlines and backoffs, nothing more.
#pragma once

#include <cstdint>

#include <uv.h>

#include <heartwheel/common/time.h>

namespace heartwheel::net::detail {

inline std::uint64_t next_random() noexcept {
  thread_local std::uint64_t state =
      uv_hrtime() ^ reinterpret_cast<std::uintptr_t>(&state) ^ 0x9e3779b97f4a7c15ULL;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

// Uniform in [0, max] (max >= 0).
inline Duration random_up_to(Duration max) noexcept {
  if (max.count() <= 0) return Duration{0};
  return Duration{
      static_cast<Duration::rep>(next_random() % (static_cast<std::uint64_t>(max.count()) + 1))};
}

}  // namespace heartwheel::net::detail
