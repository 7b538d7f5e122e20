// bench_args.h - parsing helpers shared by the benchmark command lines:
// durations written like `250ms`, `2s`, `5m`, and counts like `10k`, `1M`.
// Both throw std::invalid_argument with a message naming the bad text.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <heartwheel/common/time.h>

namespace heartwheel::bench {

// "250ms", "2s", "5m", "1h", "500us", "100ns"; a bare number is rejected so
// the unit is never guessed.
Duration parse_duration(const std::string& text);

// "1000", "10k", "1M" (k = 1000, M = 1,000,000). Must be positive.
std::size_t parse_count(const std::string& text);

// Comma-separated counts: "10k,100k,1M".
std::vector<std::size_t> parse_count_list(const std::string& text);

// Median of the values (the upper middle one for an even count). Precondition: not empty.
double median(std::vector<double> values);

}  // namespace heartwheel::bench
