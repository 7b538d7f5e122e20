#include "bench_args.h"

#include <heartwheel/common/duration_parse.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace heartwheel::bench {

namespace {
// Splits "250ms" into 250 and "ms"; throws if there is no leading number.
std::pair<double, std::string> split_number(const std::string& text, const char* what) {
  std::size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
  if (pos == 0) throw std::invalid_argument(std::string("bad ") + what + " '" + text + "': expected a number first");
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + pos, value);
  if (ec != std::errc() || ptr != text.data() + pos)
    throw std::invalid_argument(std::string("bad ") + what + " '" + text + "'");
  return {value, text.substr(pos)};
}
}  // namespace

Duration parse_duration(const std::string& text) { return heartwheel::parse_duration(text); }

std::size_t parse_count(const std::string& text) {
  const auto [value, suffix] = split_number(text, "count");
  double scale = 1;
  if (suffix == "k" || suffix == "K") scale = 1e3;
  else if (suffix == "M" || suffix == "m") scale = 1e6;
  else if (!suffix.empty())
    throw std::invalid_argument("bad count '" + text + "': use a number with optional k or M, e.g. 10k");
  const double n = value * scale;
  if (n < 1) throw std::invalid_argument("bad count '" + text + "': must be at least 1");
  return static_cast<std::size_t>(n);
}

std::vector<std::size_t> parse_count_list(const std::string& text) {
  std::vector<std::size_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(parse_count(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace heartwheel::bench
