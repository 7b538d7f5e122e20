// The delayed queue's due times in Redis (lib/src/push/held.h, private):
// milliseconds with a three-digit fraction, so that a push loaded from Redis
// keeps its place to the microsecond (issue 34). What Redis does to a score
// is modelled here: it parses the text to a double (strtod) and prints it
// back with 17 significant digits ("%.17g"), as ZRANGE ... WITHSCORES does.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "held.h"  // lib/src/push (private)

namespace push = heartwheel::push;
namespace detail = heartwheel::push::detail;

namespace {
// The score after a round trip through Redis.
std::string through_redis(const std::string& score) {
  const double stored = std::strtod(score.c_str(), nullptr);
  char printed[64];
  std::snprintf(printed, sizeof printed, "%.17g", stored);
  return printed;
}
}  // namespace

TEST_CASE("A due time survives Redis's score to the microsecond, and keeps its order",
          "[push][order]") {
  std::mt19937_64 random(0x5eed0034);
  // Microseconds from 2026 to 2100: where due times are.
  std::uniform_int_distribution<std::int64_t> when(1'767'225'600'000'000, 4'102'444'800'000'000);
  std::int64_t previous_back = -1;
  std::int64_t previous_us = -1;
  for (int i = 0; i < 200'000; ++i) {
    // Runs of neighbours (1 us apart) and random times.
    const std::int64_t us = i % 2 == 1 ? previous_us + 1 : when(random);
    const std::string score = detail::due_score(us);
    std::int64_t back = 0;
    REQUIRE(detail::parse_due_score(through_redis(score), back));
    REQUIRE(back == us);
    // Redis compares the doubles: a microsecond later is a larger score.
    if (i % 2 == 1) {
      REQUIRE(std::strtod(score.c_str(), nullptr) >
              std::strtod(detail::due_score(previous_us).c_str(), nullptr));
      REQUIRE(back > previous_back);
    }
    previous_us = us;
    previous_back = back;
  }
}

TEST_CASE("A due time is written as whole milliseconds and three decimals", "[push][order]") {
  CHECK(detail::due_score(1'795'461'343'099'123) == "1795461343099.123");
  CHECK(detail::due_score(1'795'461'343'099'003) == "1795461343099.003");
  CHECK(detail::due_score(1'795'461'343'099'000) == "1795461343099");  // as older versions wrote it
  CHECK(detail::due_score(0) == "0");
  CHECK(detail::due_score(-5) == "0");  // before the epoch: due at once
}

TEST_CASE("Scores of older versions and Redis's other spellings are read, garbage is not",
          "[push][order]") {
  std::int64_t us = 0;
  REQUIRE(detail::parse_due_score("1795461343099", us));  // a whole millisecond
  CHECK(us == 1'795'461'343'099'000);
  REQUIRE(detail::parse_due_score("1.7e+12", us));
  CHECK(us == 1'700'000'000'000'000);
  REQUIRE(detail::parse_due_score("0", us));
  CHECK(us == 0);
  for (const char* bad : {"", "x", "12x", "inf", "nan", "1e300", "-1e300"})
    CHECK_FALSE(detail::parse_due_score(bad, us));
}

TEST_CASE("Wall times become microseconds rounded up, never early", "[push][order]") {
  const push::WallTime t = push::from_unix_ms(1'795'461'343'099);
  CHECK(detail::to_unix_us_ceil(t) == 1'795'461'343'099'000);
  CHECK(detail::to_unix_us_ceil(t + std::chrono::nanoseconds(1)) == 1'795'461'343'099'001);
  CHECK(detail::from_unix_us(1'795'461'343'099'001) == t + std::chrono::microseconds(1));
}
