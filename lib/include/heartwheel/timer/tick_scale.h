// heartwheel/timer/tick_scale.h - a timing wheel's grid of ticks: times as
// whole ticks since the wheel's origin, and back.
//
// What it is
//   The two numbers that turn a TimePoint into a tick count (TimingWheel's
//   origin and tick, TimingWheel::scale()), for state that keeps its times in
//   ticks to keep them small (net::detail::DeadlineSet: 32-bit offsets). Rounding
//   picks the side of the contract: a deadline rounds UP (ceil: it can only
//   come later, never early, as in the wheel itself), "is it due yet" rounds
//   the current time DOWN (floor).
// Cost: ceil() and floor() are one 64-bit division; time() a multiply and an
//   add with overflow checks. Threads: a plain value, any thread.
#pragma once

#include <heartwheel/common/time.h>

#include <cstdint>

namespace heartwheel {

struct TickScale {
  // "Never" as a tick count: time(kNeverTicks) == kNever.
  static constexpr std::uint64_t kNeverTicks = UINT64_MAX;

  TimePoint origin{};
  Duration tick{std::chrono::milliseconds(1)};  // > 0

  // Ticks from the origin to `t`, rounded up; 0 at or before the origin;
  // kNeverTicks for kNever.
  constexpr std::uint64_t ceil(TimePoint t) const noexcept {
    if (t == kNever) return kNeverTicks;
    const auto d = (t - origin).count();
    if (d <= 0) return 0;
    const auto ud = static_cast<std::uint64_t>(d);
    const auto tk = static_cast<std::uint64_t>(tick.count());
    return ud / tk + (ud % tk != 0);
  }
  // Rounded down; 0 at or before the origin.
  constexpr std::uint64_t floor(TimePoint t) const noexcept {
    const auto d = (t - origin).count();
    if (d <= 0) return 0;
    return static_cast<std::uint64_t>(d) / static_cast<std::uint64_t>(tick.count());
  }
  // A timeout in whole ticks, rounded up; kNeverTicks when off (<= 0, as
  // deadline_after() reads it).
  constexpr std::uint64_t ticks_in(Duration timeout) const noexcept {
    if (timeout.count() <= 0) return kNeverTicks;
    const auto ud = static_cast<std::uint64_t>(timeout.count());
    const auto tk = static_cast<std::uint64_t>(tick.count());
    return ud / tk + (ud % tk != 0);
  }
  // The time of tick `ticks`; kNever when it is kNeverTicks or past what a
  // TimePoint holds (so sums saturate, as deadline_after() does).
  constexpr TimePoint time(std::uint64_t ticks) const noexcept {
    if (ticks > static_cast<std::uint64_t>(INT64_MAX)) return kNever;
    Duration::rep since = 0;
    Duration::rep at = 0;
    if (__builtin_mul_overflow(static_cast<Duration::rep>(ticks), tick.count(), &since) ||
        __builtin_add_overflow(origin.time_since_epoch().count(), since, &at) ||
        at == kNever.time_since_epoch().count())
      return kNever;
    return TimePoint(Duration(at));
  }
};

}  // namespace heartwheel
