// heartwheel/common/histogram.h - a fixed-memory, log-linear latency histogram.
//
// What it is
//   An HDR-style histogram of non-negative integer values (microseconds,
//   milliseconds: the unit is the caller's). Values below 2^sig_bits are
//   counted exactly; above, every power-of-two range [2^k, 2^(k+1)) is cut into
//   2^(sig_bits-1) equal buckets. A bucket's width is therefore at most
//   1 / 2^(sig_bits-1) of the values in it: with the default sig_bits = 8 a
//   reported percentile is within 0.8% of the true value (it reports the
//   bucket's upper edge, clamped to the exact max, so it never under-reports a
//   latency). The whole uint64 range is covered; memory is fixed at
//   bucket_count() counters (7,424 for sig_bits = 8, 58 KiB), whatever is
//   recorded.
//
//   Buckets (sig_bits = s, half = 2^(s-1)):
//     index i < 2^s            : the value i exactly
//     index 2^s + (e-1)*half+j : values [ (half+j) << e, (half+j+1) << e ), e >= 1
//
// Merging and transport
//   merge() adds another histogram with the same sig_bits bucket by bucket, so
//   merging per-process histograms gives exactly the histogram of all values.
//   to_json()/from_json() carry the raw (sparse) counts as JSON text, for a
//   child process to hand its histogram to its parent. The JSON is text so
//   that this header needs no JSON library (the library parses it privately).
//
// Cost: record() is O(1) (a count-leading-zeros and an add); percentile() is
// O(buckets). No allocation after construction.
// Threads: none inside; one histogram per thread, merge afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::stats {

class Histogram {
 public:
  static constexpr unsigned kDefaultSigBits = 8;

  // sig_bits in [2, 16]; throws std::invalid_argument otherwise.
  explicit Histogram(unsigned sig_bits = kDefaultSigBits);

  // Counts `value` once (or `count` times). O(1).
  void record(std::uint64_t value) noexcept { record_n(value, 1); }
  void record_n(std::uint64_t value, std::uint64_t count) noexcept;

  // Adds every count of `other`. Throws std::invalid_argument when the
  // sig_bits differ (the buckets would not line up).
  void merge(const Histogram& other);

  // Forgets everything recorded.
  void reset() noexcept;

  // The value at percentile p (0..100): the smallest bucket edge at or below
  // which p% of the values lie, clamped to [min(), max()]. 0 when empty.
  std::uint64_t percentile(double p) const noexcept;

  std::uint64_t count() const noexcept { return total_; }
  std::uint64_t min() const noexcept { return total_ ? min_ : 0; }
  std::uint64_t max() const noexcept { return max_; }
  double mean() const noexcept {
    return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0;
  }
  unsigned sig_bits() const noexcept { return sig_bits_; }
  std::size_t bucket_count() const noexcept { return counts_.size(); }

  // Bucket geometry, exposed for tests and for readers of raw dumps.
  std::size_t bucket_of(std::uint64_t value) const noexcept;
  std::uint64_t bucket_low(std::size_t index) const noexcept;   // smallest value in it
  std::uint64_t bucket_high(std::size_t index) const noexcept;  // largest value in it

  // Raw form, one JSON object as text:
  //   {"sig_bits", "count", "min", "max", "sum", "buckets": [[index, count], ...]}
  // with only the non-empty buckets. from_json() throws std::invalid_argument
  // on a malformed document (bad JSON, missing keys, counts that disagree).
  std::string to_json() const;
  static Histogram from_json(std::string_view text);

  // Summary for reports, one JSON object as text:
  //   {"count", "min", "mean", "p50", "p90", "p99", "p999", "max"}.
  std::string summary_json() const;

  friend bool operator==(const Histogram& a, const Histogram& b) noexcept;

 private:
  unsigned sig_bits_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t total_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  std::uint64_t sum_ = 0;  // wraps only past 1.8e19, far beyond any run
};

}  // namespace heartwheel::stats
