// See heartwheel/common/metric_families.h.
#include <heartwheel/common/metric_families.h>

#include <array>
#include <chrono>
#include <stdexcept>

namespace heartwheel {

void write_duration_buckets(MetricSink& out, std::span<const std::uint64_t> buckets, Duration sum,
                            MetricLabels labels) {
  constexpr std::size_t kMax = 40;
  if (buckets.size() < 2 || buckets.size() > kMax)
    throw std::invalid_argument("metrics: a duration histogram has 2..40 buckets");
  std::array<double, kMax - 1> bounds{};
  for (std::size_t i = 0; i + 1 < buckets.size(); ++i)
    bounds[i] = std::chrono::duration<double>(DurationHistogram<kMax>::bound(i)).count();
  out.histogram(std::span<const double>(bounds.data(), buckets.size() - 1), buckets,
                std::chrono::duration<double>(sum).count(), labels);
}

}  // namespace heartwheel
