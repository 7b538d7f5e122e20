// heartwheel/common/time.h - the time vocabulary every layer shares.
//
// All public APIs take std::chrono types; raw integers appear only at the libuv
// boundary (milliseconds for uv_timer_t) and are converted in one place.
// TimePoint is a steady (monotonic) instant with nanosecond resolution. It is
// the same clock libuv reads (CLOCK_MONOTONIC), so a uv_now() value converts
// with to_time_point() below.
#pragma once

#include <chrono>
#include <cstdint>

namespace heartwheel {

using Clock = std::chrono::steady_clock;
using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<Clock, Duration>;

// "Never": a deadline that is not set. Every deadline sum in the library goes
// through deadline_after(), so a huge timeout (Duration::max() as "never")
// saturates here instead of wrapping into the past.
inline constexpr TimePoint kNever = TimePoint::max();

// now + timeout, saturating at kNever. A timeout <= 0 means "off" and gives
// kNever too: in every policy of the library a zero duration switches that
// check off.
constexpr TimePoint deadline_after(TimePoint now, Duration timeout) noexcept {
  if (timeout.count() <= 0 || now == kNever) return kNever;
  if (now.time_since_epoch().count() >= 0 && timeout >= kNever - now) return kNever;
  return now + timeout;
}

// Converts libuv's loop time (uv_now(), milliseconds on CLOCK_MONOTONIC).
inline TimePoint from_uv_millis(std::uint64_t ms) noexcept {
  return TimePoint(std::chrono::milliseconds(ms));
}

// Rounds a positive duration up to whole milliseconds, for uv_timer_start().
// Rounding up keeps the "never early" contract at the libuv boundary.
inline std::uint64_t to_uv_millis_ceil(Duration d) noexcept {
  if (d.count() <= 0) return 0;
  return static_cast<std::uint64_t>((d.count() + 999'999) / 1'000'000);
}

}  // namespace heartwheel
