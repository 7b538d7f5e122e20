// heartwheel/common/duration_histogram.h - a fixed histogram of durations with
// power-of-two millisecond buckets, cheap enough to record on the I/O path.
//
// What it is
//   N counters: bucket i (i < N - 1) counts durations in (2^(i-1), 2^i] ms
//   (bucket 0: up to 1 ms, negative durations included), the last bucket
//   everything above 2^(N-2) ms (+Inf). Plus the sum of the recorded
//   durations, so a mean and a Prometheus histogram (metrics layer) follow.
//   The bounds match LoopWheel::lag_bucket_bound, so every duration
//   histogram of the library reads the same way.
//
// Why power-of-two milliseconds: the loop clock has millisecond resolution
// (libuv's cached time), so finer buckets would only split rounding noise,
// and doubling covers 1 ms .. minutes in 20 buckets.
//
// Cost: record() is one ceil to ms, one bit_width and two additions; no
// allocation. Plain data (trivially copyable): copy it to another thread or
// process as bytes.
//
// Threads: none of its own; one writer at a time (the loop that owns it).
#pragma once

#include <heartwheel/common/time.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace heartwheel {

template <std::size_t N>
struct DurationHistogram {
  static_assert(N >= 2 && N <= 40, "DurationHistogram: 2..40 buckets");
  static constexpr std::size_t kBuckets = N;

  // Upper bound of bucket i, for i < kBuckets - 1 (the last bucket is +Inf).
  static constexpr Duration bound(std::size_t i) noexcept {
    return std::chrono::milliseconds(std::int64_t{1} << i);
  }
  // The bucket that counts `d`.
  static constexpr std::size_t bucket_of(Duration d) noexcept {
    if (d <= Duration{0}) return 0;
    const auto ms =
        static_cast<std::uint64_t>(std::chrono::ceil<std::chrono::milliseconds>(d).count());
    return ms <= 1 ? 0 : std::min<std::size_t>(std::bit_width(ms - 1), N - 1);
  }

  std::array<std::uint64_t, N> buckets{};  // per bucket, not cumulative
  Duration sum{0};

  void record(Duration d) noexcept {
    ++buckets[bucket_of(d)];
    sum += d;
  }
  std::uint64_t count() const noexcept {
    std::uint64_t n = 0;
    for (auto b : buckets) n += b;
    return n;
  }
  void merge(const DurationHistogram& o) noexcept {
    for (std::size_t i = 0; i < N; ++i) buckets[i] += o.buckets[i];
    sum += o.sum;
  }
};

}  // namespace heartwheel
