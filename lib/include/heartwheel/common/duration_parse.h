// heartwheel/common/duration_parse.h - durations written by people, for command lines.
//
// Accepted: a non-negative integer or decimal followed by a unit, or a bare 0:
//   "0" (off), "250ms", "2s", "1.5s", "5m", "1h", "100us", "500ns", "1d".
// Units: ns, us, ms, s, m, h, d. A bare number other than 0 is rejected
// because "30" could mean seconds or milliseconds; say which.
// Every example and tool parses its duration flags with this.
// Threads: pure functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <heartwheel/common/time.h>

namespace heartwheel {

// The duration `text` names, or nullopt if it is not in the grammar above
// (empty, negative, unknown unit, missing unit, overflow).
std::optional<Duration> try_parse_duration(std::string_view text) noexcept;

// Same, but throws std::invalid_argument with a message that quotes `text`
// and shows the accepted forms.
Duration parse_duration(std::string_view text);

// The shortest exact spelling in the same grammar: 0 -> "0", 1500ms -> "1500ms",
// 2s -> "2s", 90s -> "90s", 5min -> "5m". parse_duration(format_duration(d)) == d.
std::string format_duration(Duration d);

}  // namespace heartwheel
