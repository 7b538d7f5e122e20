// The idle bench's ground-truth checker must flag every kind of wrong result,
// or a fast but wrong tracker would look good.
#include <catch2/catch.hpp>

#include "checker.h"

using namespace std::chrono_literals;
using heartwheel::TimePoint;
using heartwheel::bench::Checker;

namespace {
TimePoint at(std::chrono::milliseconds ms) { return TimePoint(ms); }

struct Fixture {
  std::vector<std::uint8_t> silent{1, 0};  // connection 0 goes silent, 1 stays active
  Checker chk{2, silent, 10s, 20s, 5s, 11ms};
  Fixture() {
    for (std::size_t c = 0; c < 2; ++c) {
      chk[c].last_read = at(1000ms);
      chk[c].last_write = at(1000ms);
    }
  }
};
}  // namespace

TEST_CASE("A close exactly at the read-idle deadline, or within the tolerance, is correct", "[bench][idle]") {
  Fixture f;
  f.chk.on_close(0, at(11'010ms));
  CHECK(f.chk.counts().errors() == 0);
  CHECK(f.chk.counts().closed_silent == 1);
  CHECK(f.chk.counts().max_lateness == 10ms);
}

TEST_CASE("A close before the idle deadline counts as early", "[bench][idle]") {
  Fixture f;
  f.chk.on_close(0, at(10'999ms));
  CHECK(f.chk.counts().early == 1);
}

TEST_CASE("A close a full tolerance after the deadline counts as late", "[bench][idle]") {
  Fixture f;
  f.chk.on_close(0, at(11'011ms));
  CHECK(f.chk.counts().late == 1);
}

TEST_CASE("Closing a connection that never went silent is an error", "[bench][idle]") {
  Fixture f;
  f.chk.on_close(1, at(11'000ms));
  CHECK(f.chk.counts().closed_active == 1);
  CHECK(f.chk.counts().errors() == 1);
}

TEST_CASE("An overdue open connection or request counts as missed at the end", "[bench][idle]") {
  Fixture f;
  f.chk[1].last_read = at(30'000ms);  // active: not due at the end
  f.chk[1].last_write = at(30'000ms);
  f.chk[1].in_request = true;
  f.chk[1].request_begin = at(20'000ms);  // due at 25 s: missed
  f.chk.finish(at(31'000ms));
  CHECK(f.chk.counts().missed == 2);  // connection 0 (due at 11 s) and the request
}

TEST_CASE("A timeout of a request that already ended is an error", "[bench][idle]") {
  Fixture f;
  f.chk.on_request_timeout(0, at(7000ms));
  CHECK(f.chk.counts().stale_request == 1);
}
