// See heartwheel/common/duration_parse.h for the grammar.
#include <heartwheel/common/duration_parse.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace heartwheel {

namespace {

struct Unit {
  std::string_view name;
  std::int64_t nanos;
};

// Longest names first so "ms" is not read as "m" followed by junk.
constexpr Unit kUnits[] = {
    {"ns", 1},
    {"us", 1'000},
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
    {"d", 86'400'000'000'000},
};

}  // namespace

std::optional<Duration> try_parse_duration(std::string_view text) noexcept {
  if (text == "0") return Duration{0};
  std::size_t i = 0;
  std::uint64_t whole = 0;
  std::size_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (whole > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
    ++i;
    ++digits;
  }
  double fraction = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    double scale = 0.1;
    std::size_t frac_digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      fraction += scale * (text[i] - '0');
      scale /= 10;
      ++i;
      ++frac_digits;
    }
    if (frac_digits == 0) return std::nullopt;
  }
  if (digits == 0) return std::nullopt;
  const std::string_view unit = text.substr(i);
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    const auto limit =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / u.nanos);
    if (whole >= limit) return std::nullopt;
    const auto nanos =
        static_cast<std::int64_t>(whole) * u.nanos +
        static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(u.nanos)));
    return Duration{nanos};
  }
  return std::nullopt;
}

Duration parse_duration(std::string_view text) {
  if (auto d = try_parse_duration(text)) return *d;
  throw std::invalid_argument("invalid duration '" + std::string(text) +
                              "': write a number and a unit (ns, us, ms, s, m, h, d), "
                              "e.g. 250ms, 2s, 1.5s, 5m, 1h; 0 means off");
}

std::string format_duration(Duration d) {
  const std::int64_t n = d.count();
  if (n == 0) return "0";
  // Largest unit that divides exactly; iterate from the largest.
  for (auto it = std::rbegin(kUnits); it != std::rend(kUnits); ++it) {
    if (n % it->nanos == 0) return std::to_string(n / it->nanos) + std::string(it->name);
  }
  return std::to_string(n) + "ns";
}

}  // namespace heartwheel
