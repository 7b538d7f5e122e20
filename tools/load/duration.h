// tools/load/duration.h - the harness parses durations with the library's
// parser (heartwheel/common/duration_parse.h), like every other program here.
#pragma once

#include <heartwheel/common/duration_parse.h>

namespace heartwheel::load {
using heartwheel::format_duration;
using heartwheel::parse_duration;
}  // namespace heartwheel::load
