// Log-linear bucket arithmetic for heartwheel::stats::Histogram; see the header
// for the bucket layout and its error bound.
#include <heartwheel/common/histogram.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace heartwheel::stats {

Histogram::Histogram(unsigned sig_bits) : sig_bits_(sig_bits) {
  if (sig_bits < 2 || sig_bits > 16)
    throw std::invalid_argument("Histogram: sig_bits must be in [2, 16], got " +
                                std::to_string(sig_bits));
  const std::size_t half = std::size_t{1} << (sig_bits - 1);
  // Exact part (2^s) plus one group of `half` buckets per exponent e = 1..64-s.
  counts_.assign((std::size_t{1} << sig_bits) + (64 - sig_bits) * half, 0);
}

std::size_t Histogram::bucket_of(std::uint64_t value) const noexcept {
  const std::uint64_t exact = std::uint64_t{1} << sig_bits_;
  if (value < exact) return static_cast<std::size_t>(value);
  // e shifts value so that its top bit lands on bit (s-1): value >> e in [half, 2*half).
  const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(value));
  const unsigned e = msb - (sig_bits_ - 1);
  const std::uint64_t half = exact >> 1;
  return static_cast<std::size_t>(exact + (e - 1) * half + ((value >> e) - half));
}

std::uint64_t Histogram::bucket_low(std::size_t index) const noexcept {
  const std::uint64_t exact = std::uint64_t{1} << sig_bits_;
  if (index < exact) return index;
  const std::uint64_t half = exact >> 1;
  const std::uint64_t e = (index - exact) / half + 1;
  const std::uint64_t j = (index - exact) % half;
  return (half + j) << e;
}

std::uint64_t Histogram::bucket_high(std::size_t index) const noexcept {
  const std::uint64_t exact = std::uint64_t{1} << sig_bits_;
  if (index < exact) return index;
  const std::uint64_t half = exact >> 1;
  const std::uint64_t e = (index - exact) / half + 1;
  return bucket_low(index) + ((std::uint64_t{1} << e) - 1);
}

void Histogram::record_n(std::uint64_t value, std::uint64_t count) noexcept {
  if (count == 0) return;
  counts_[bucket_of(value)] += count;
  total_ += count;
  sum_ += value * count;
  if (value < min_) min_ = value;
  if (value > max_) max_ = value;
}

void Histogram::merge(const Histogram& other) {
  if (other.sig_bits_ != sig_bits_)
    throw std::invalid_argument("Histogram::merge: sig_bits differ (" + std::to_string(sig_bits_) +
                                " vs " + std::to_string(other.sig_bits_) + ")");
  if (other.total_ == 0) return;
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  sum_ += other.sum_;
  if (other.min_ < min_) min_ = other.min_;
  if (other.max_ > max_) max_ = other.max_;
}

void Histogram::reset() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = sum_ = max_ = 0;
  min_ = UINT64_MAX;
}

std::uint64_t Histogram::percentile(double p) const noexcept {
  if (total_ == 0) return 0;
  if (p <= 0) return min_;
  if (p >= 100) return max_;
  // The rank of the value we want, 1-based: ceil(p% of total), at least 1.
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total_)));
  if (rank == 0) rank = 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(bucket_high(i), min_, max_);
  }
  return max_;
}

std::string Histogram::to_json() const {
  nlohmann::json buckets = nlohmann::json::array();
  for (std::size_t i = 0; i < counts_.size(); ++i)
    if (counts_[i] != 0) buckets.push_back({i, counts_[i]});
  const nlohmann::json j = {{"sig_bits", sig_bits_}, {"count", total_},
                            {"min", min()},          {"max", max_},
                            {"sum", sum_},           {"buckets", std::move(buckets)}};
  return j.dump();
}

Histogram Histogram::from_json(std::string_view text) {
  try {
    const auto j = nlohmann::json::parse(text);
    Histogram h(j.at("sig_bits").get<unsigned>());
    std::uint64_t total = 0;
    for (const auto& b : j.at("buckets")) {
      const auto index = b.at(0).get<std::size_t>();
      if (index >= h.counts_.size())
        throw std::invalid_argument("Histogram::from_json: bucket index " + std::to_string(index) +
                                    " out of range");
      h.counts_[index] += b.at(1).get<std::uint64_t>();
      total += b.at(1).get<std::uint64_t>();
    }
    if (total != j.at("count").get<std::uint64_t>())
      throw std::invalid_argument("Histogram::from_json: bucket counts do not add up to \"count\"");
    h.total_ = total;
    h.sum_ = j.at("sum").get<std::uint64_t>();
    h.max_ = j.at("max").get<std::uint64_t>();
    h.min_ = total ? j.at("min").get<std::uint64_t>() : UINT64_MAX;
    return h;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("Histogram::from_json: malformed histogram: ") +
                                e.what());
  }
}

std::string Histogram::summary_json() const {
  const nlohmann::json j = {{"count", total_},
                            {"min", min()},
                            {"mean", std::round(mean() * 10) / 10},
                            {"p50", percentile(50)},
                            {"p90", percentile(90)},
                            {"p99", percentile(99)},
                            {"p999", percentile(99.9)},
                            {"max", max_}};
  return j.dump();
}

bool operator==(const Histogram& a, const Histogram& b) noexcept {
  return a.sig_bits_ == b.sig_bits_ && a.total_ == b.total_ && a.sum_ == b.sum_ &&
         a.min() == b.min() && a.max_ == b.max_ && a.counts_ == b.counts_;
}

}  // namespace heartwheel::stats
