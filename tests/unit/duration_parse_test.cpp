// The command-line duration grammar: what it accepts, what it refuses, and
// that formatting round-trips.
#include <heartwheel/common/duration_parse.h>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::format_duration;
using heartwheel::parse_duration;
using heartwheel::try_parse_duration;

TEST_CASE("Durations with units parse to exact nanoseconds", "[duration]") {
  CHECK(parse_duration("0") == Duration{0});
  CHECK(parse_duration("250ms") == 250ms);
  CHECK(parse_duration("2s") == 2s);
  CHECK(parse_duration("1.5s") == 1500ms);
  CHECK(parse_duration("5m") == 5min);
  CHECK(parse_duration("1h") == 1h);
  CHECK(parse_duration("100us") == 100us);
  CHECK(parse_duration("7ns") == 7ns);
  CHECK(parse_duration("1d") == 24h);
  CHECK(parse_duration("0ms") == Duration{0});
}

TEST_CASE("Ambiguous or malformed durations are refused with a helpful message", "[duration]") {
  for (const char* bad :
       {"", "30", "-1s", "s", "1.s", ".5s", "1x", "1 s", "1ms2", "2S", "99999999999999999999h"}) {
    INFO(bad);
    CHECK_FALSE(try_parse_duration(bad).has_value());
  }
  try {
    parse_duration("30");
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("'30'") != std::string::npos);
    CHECK(std::string(e.what()).find("250ms") != std::string::npos);
  }
}

TEST_CASE("Formatting picks the largest exact unit and round-trips", "[duration]") {
  CHECK(format_duration(Duration{0}) == "0");
  CHECK(format_duration(1500ms) == "1500ms");
  CHECK(format_duration(2s) == "2s");
  CHECK(format_duration(90s) == "90s");
  CHECK(format_duration(5min) == "5m");
  CHECK(format_duration(3ns) == "3ns");
  for (Duration d :
       {Duration{1}, Duration{999}, Duration(250ms), Duration(36h), Duration(1234567us)})
    CHECK(parse_duration(format_duration(d)) == d);
}
