// chat::RateLimits and chat::RateBuckets (programs/chat-core/rate_limits.h,
// heartwheel-chat's --rate-limit): the flag's parsing, and the buckets driven
// by hand-made millisecond stamps (no clock, no sleeping): the burst, the
// refill rate, fractions, the clock wrapping, when an entry may be forgotten.
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "rate_limits.h"

using chat::RateBuckets;
using chat::RateLimits;
using chat::RateOp;

namespace {
// How many of `n` requests of `op`, all at `now`, get a token.
int take_n(RateBuckets& b, const RateLimits& l, RateOp op, int n, std::uint32_t now) {
  int got = 0;
  for (int i = 0; i < n; ++i) got += b.take(l, op, now) ? 1 : 0;
  return got;
}
}  // namespace

TEST_CASE("The default rates are generous and every op has its own", "[chat][rate]") {
  const RateLimits l;
  CHECK(l.per_second(RateOp::publish) == 1000);
  CHECK(l.per_second(RateOp::subscribe) == 200);
  CHECK(l.per_second(RateOp::history) == 50);
  CHECK(l.per_second(RateOp::presence) == 50);
  CHECK(l.describe() == "publish=1000/s subscribe=200/s history=50/s presence=50/s");
  CHECK(chat::rate_op("publish") == RateOp::publish);
  CHECK_FALSE(chat::rate_op("unsubscribe"));
  CHECK_FALSE(chat::rate_op("refresh"));
}

TEST_CASE("Rate limit values are OP=N/s, and a bad one names the flag", "[chat][rate]") {
  RateLimits l;
  l.set("publish=5/s");
  l.set("history=0.5/s");
  l.set("presence=2.5/s");
  CHECK(l.per_second(RateOp::publish) == 5);
  CHECK(l.burst(RateOp::publish) == 5);
  CHECK(l.burst(RateOp::history) == 1);  // at least one
  CHECK(l.burst(RateOp::presence) == 2);
  CHECK(l.text(RateOp::history) == "0.5/s");
  l.set("publish=7/s");  // the last one wins
  CHECK(l.per_second(RateOp::publish) == 7);
  for (const char* bad : {"publish", "publish=", "publish=5", "publish=5/m", "publish=/s",
                          "publish=x/s", "publish=0/s", "publish=-2/s", "publish=inf/s",
                          "publish=nan/s", "publish=1e7/s", "publish=5 /s", "unsubscribe=1/s",
                          "=1/s"}) {
    INFO(bad);
    try {
      l.set(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("--rate-limit") != std::string::npos);
    }
  }
  CHECK(l.per_second(RateOp::publish) == 7);  // a refused value changes nothing
}

TEST_CASE("A bucket allows its burst at once, then refills at its rate", "[chat][rate]") {
  RateLimits l;
  l.set("publish=5/s");
  RateBuckets b(l, 1000);
  CHECK(take_n(b, l, RateOp::publish, 50, 1000) == 5);
  CHECK(take_n(b, l, RateOp::publish, 1, 1199) == 0);  // 0.995 of a token
  CHECK(take_n(b, l, RateOp::publish, 1, 1200) == 1);  // 200 ms: one
  CHECK(take_n(b, l, RateOp::publish, 10, 1600) == 2);  // 400 ms more: two
  // Idle for long: full again, never more than the burst.
  CHECK(take_n(b, l, RateOp::publish, 50, 60000) == 5);
  // The other ops are untouched (their own buckets, still full).
  CHECK(take_n(b, l, RateOp::history, 100, 60000) == 50);
  CHECK(take_n(b, l, RateOp::subscribe, 300, 60000) == 200);
}

TEST_CASE("A steady client under its rate is never refused, one over it is held to it",
          "[chat][rate]") {
  RateLimits l;
  l.set("publish=20/s");
  RateBuckets under(l, 0), over(l, 0);
  int refused = 0, got = 0;
  // 10 s: one request every 60 ms (16.7/s) and one every 10 ms (100/s), one
  // millisecond at a time, so the refill's rounding adds up as it would.
  for (std::uint32_t ms = 0; ms < 10000; ++ms) {
    if (ms % 60 == 0) refused += under.take(l, RateOp::publish, ms) ? 0 : 1;
    if (ms % 10 == 0) got += over.take(l, RateOp::publish, ms) ? 1 : 0;
  }
  CHECK(refused == 0);
  CHECK(got >= 20 + 199);  // the burst, then 20 a second over 9.99 s (less rounding)
  CHECK(got <= 20 + 200);
}

TEST_CASE("Fractional rates refill exactly, even when other ops keep the stamp moving",
          "[chat][rate]") {
  RateLimits l;
  l.set("history=0.5/s");
  RateBuckets b(l, 0);
  CHECK(b.take(l, RateOp::history, 0));
  int got = 0;
  // Publishing every millisecond refills every bucket every millisecond: the
  // history bucket's tiny refills must still add up to one every 2 s.
  for (std::uint32_t ms = 1; ms <= 10000; ++ms) {
    (void)b.take(l, RateOp::publish, ms);
    if (b.take(l, RateOp::history, ms)) ++got;
  }
  CHECK(got == 5);
}

TEST_CASE("The millisecond stamp may wrap around 2^32", "[chat][rate]") {
  RateLimits l;
  l.set("publish=1/s");
  const std::uint32_t near_end = 0xFFFFFF00u;
  RateBuckets b(l, near_end);
  CHECK(b.take(l, RateOp::publish, near_end));
  CHECK_FALSE(b.take(l, RateOp::publish, near_end + 500u));
  CHECK(b.take(l, RateOp::publish, near_end + 1000u));  // wrapped: 744 after zero
}

TEST_CASE("A bucket entry may be forgotten once every bucket is full again", "[chat][rate]") {
  RateLimits l;
  l.set("publish=10/s");
  l.set("history=1/s");
  RateBuckets b(l, 0);
  CHECK(b.full(l, 0));
  CHECK(b.take(l, RateOp::publish, 0));
  CHECK(b.take(l, RateOp::history, 0));
  CHECK_FALSE(b.full(l, 100));
  CHECK_FALSE(b.full(l, 999));  // history needs 1 s
  CHECK(b.full(l, 1000));
  // Asking does not refill: the next take still finds what it should.
  CHECK(b.take(l, RateOp::history, 1000));
  CHECK_FALSE(b.take(l, RateOp::history, 1000));
}
