#include "duration.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace heartwheel::load {

std::chrono::nanoseconds parse_duration(const std::string& text) {
  if (text == "0") return std::chrono::nanoseconds{0};
  const auto bad = [&] {
    return std::invalid_argument(
        "bad duration '" + text +
        "': write a number and a unit (ns, us, ms, s, m, h), e.g. 250ms, 2s, 5m");
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0 || i == text.size()) throw bad();
  char* end = nullptr;
  const std::string number = text.substr(0, i);
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) throw bad();
  const std::string unit = text.substr(i);
  double scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m" || unit == "min")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else
    throw bad();
  const double ns = value * scale;
  if (ns > 9.2e18) throw std::invalid_argument("duration '" + text + "' is too long");
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ns)));
}

std::string format_duration(std::chrono::nanoseconds d) {
  const auto n = d.count();
  if (n == 0) return "0";
  struct Unit {
    std::int64_t ns;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{3600'000'000'000, "h"}, {60'000'000'000, "m"},
                                    {1'000'000'000, "s"},    {1'000'000, "ms"},
                                    {1'000, "us"},           {1, "ns"}};
  for (const auto& u : kUnits)
    if (n % u.ns == 0) return std::to_string(n / u.ns) + u.name;
  return std::to_string(n) + "ns";
}

}  // namespace heartwheel::load
