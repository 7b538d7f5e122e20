// tools/load/duration.h - command-line durations: "250ms", "2s", "5m", "1h".
//
// Accepted units: ns, us, ms, s, m, h; a decimal number before the unit
// ("1.5s"); "0" alone means zero. Anything else throws std::invalid_argument
// naming the bad text, so CLI11 shows the user what to fix.
#pragma once

#include <chrono>
#include <string>

namespace heartwheel::load {

std::chrono::nanoseconds parse_duration(const std::string& text);

// "1.5s", "250ms", "0": the shortest exact spelling for reports.
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace heartwheel::load
