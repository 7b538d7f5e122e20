// See heartwheel/net/overload.h: the pressure and scale arithmetic.
#include <heartwheel/net/overload.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace heartwheel::net {

bool OverloadOptions::scaling() const noexcept {
  const bool pressure =
      saturation_connections > start_connections || memory_saturation_bytes > memory_start_bytes;
  return pressure && (min_timeout.count() > 0 || min_scale < 1.0);
}

void OverloadOptions::validate() const {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("overload options: " + what);
  };
  if ((start_connections != 0 || saturation_connections != 0) &&
      saturation_connections <= start_connections)
    fail("saturation_connections (" + std::to_string(saturation_connections) +
         ") must be above start_connections (" + std::to_string(start_connections) + ")");
  if ((memory_start_bytes != 0 || memory_saturation_bytes != 0) &&
      memory_saturation_bytes <= memory_start_bytes)
    fail("memory_saturation_bytes must be above memory_start_bytes");
  if (!(min_scale >= 0.0 && min_scale <= 1.0)) fail("min_scale must be within 0..1");
  if (min_timeout.count() < 0) fail("min_timeout must not be negative");
  if (min_timeout.count() > 0 && min_scale < 1.0)
    fail("set min_scale or min_timeout, not both (the floor is one or the other)");
  if (memory_saturation_bytes > 0 && memory_sample_interval < std::chrono::milliseconds(1))
    fail("memory_sample_interval must be at least 1ms");
  if (drop_idle_after.count() < 0) fail("drop_idle_after must not be negative");
  if (activity_granularity.count() != 0 && activity_granularity < std::chrono::milliseconds(1))
    fail("activity_granularity must be at least 1ms (or 0: chosen from the timeouts)");
}

std::uint32_t pressure_steps(std::size_t value, std::size_t start,
                             std::size_t saturation) noexcept {
  if (saturation <= start || value <= start) return 0;
  if (value >= saturation) return kPressureSteps;
  // (value - start) / (saturation - start) in steps, rounded down; sizes in
  // bytes near 2^64 go through long double instead of overflowing.
  const std::size_t span = saturation - start, x = value - start;
  if (x <= SIZE_MAX / kPressureSteps) return static_cast<std::uint32_t>(x * kPressureSteps / span);
  return static_cast<std::uint32_t>(static_cast<long double>(x) / static_cast<long double>(span) *
                                    kPressureSteps);
}

Duration scaled_timeout(Duration timeout, std::uint32_t steps, const OverloadOptions& o) noexcept {
  if (timeout.count() <= 0 || steps == 0) return timeout;
  steps = std::min(steps, kPressureSteps);
  Duration floor = timeout;
  if (o.min_timeout.count() > 0) {
    floor = std::min(timeout, o.min_timeout);
  } else if (o.min_scale < 1.0) {
    // Clamped below 2^63 before the conversion back (a "never" timeout).
    const double f = std::min(static_cast<double>(timeout.count()) * o.min_scale, 9.0e18);
    floor = std::min(timeout, Duration(static_cast<Duration::rep>(f)));
  }
  // The part above the floor shrinks by steps/kPressureSteps, in integers:
  // exact, and no overflow for any timeout up to Duration::max().
  const Duration::rep span = (timeout - floor).count();
  const Duration::rep cut =
      span / kPressureSteps * steps + span % kPressureSteps * steps / kPressureSteps;
  return timeout - Duration(cut);
}

IdlePolicy scaled_policy(const IdlePolicy& base, std::uint32_t steps,
                         const OverloadOptions& o) noexcept {
  IdlePolicy p = base;
  p.read_idle = scaled_timeout(base.read_idle, steps, o);
  p.write_idle = scaled_timeout(base.write_idle, steps, o);
  p.all_idle = scaled_timeout(base.all_idle, steps, o);
  return p;
}

unsigned activity_shift(Duration granularity) noexcept {
  const auto ns = static_cast<std::uint64_t>(
      std::max(granularity, Duration(std::chrono::milliseconds(1))).count());
  return static_cast<unsigned>(std::bit_width(ns) - 1);
}

Duration activity_granularity_for(const OverloadOptions& o, const IdlePolicy& base) noexcept {
  if (o.activity_granularity.count() > 0) return o.activity_granularity;
  Duration g = std::chrono::seconds(1);
  if (o.scaling()) {
    const IdlePolicy floor = scaled_policy(base, kPressureSteps, o);
    for (const Duration d : {floor.read_idle, floor.all_idle})
      if (d.count() > 0) g = std::min(g, d / 8);
  }
  return std::max(g, Duration(std::chrono::milliseconds(1)));
}

}  // namespace heartwheel::net
