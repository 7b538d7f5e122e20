// heartwheel-load --auto-reconnect: the backoff (net::Connector's formula plus
// jitter) and the per-second storm statistics, merged over worker processes.
#include <catch2/catch.hpp>

#include "options.h"
#include "reconnect.h"
#include "result.h"

using namespace heartwheel::load;
using namespace std::chrono_literals;

TEST_CASE("Without jitter the reconnect delay doubles from the initial delay up to the cap",
          "[load][reconnect]") {
  ReconnectOptions o;
  o.enabled = true;
  o.initial = 100ms;
  o.max = 1s;
  o.jitter = 0;
  std::mt19937_64 rng(1);
  CHECK(o.delay(1, rng) == 100ms);
  CHECK(o.delay(2, rng) == 200ms);
  CHECK(o.delay(3, rng) == 400ms);
  CHECK(o.delay(4, rng) == 800ms);
  CHECK(o.delay(5, rng) == 1s);
  CHECK(o.delay(40, rng) == 1s);
  CHECK(o.delay(0, rng) == 100ms);  // a close of an open connection waits the initial delay
}

TEST_CASE("Full jitter spreads reconnect delays over the whole interval, never above it",
          "[load][reconnect]") {
  ReconnectOptions o;
  o.enabled = true;
  o.initial = 1s;
  o.jitter = 1.0;
  std::mt19937_64 rng(7);
  int buckets[10] = {};
  for (int i = 0; i < 10000; ++i) {
    const auto d = o.delay(1, rng);
    REQUIRE(d >= 0ns);
    REQUIRE(d <= 1s);
    ++buckets[std::min<std::int64_t>(9, d.count() / 100'000'000)];
  }
  // Uniform: each tenth of the second holds about 1000 of 10000.
  for (int b : buckets) CHECK((b > 800 && b < 1200));
  o.jitter = 0.2;  // net::Connector's default: 80..100% of the delay
  for (int i = 0; i < 1000; ++i) {
    const auto d = o.delay(1, rng);
    REQUIRE(d >= 800ms);
    REQUIRE(d <= 1s);
  }
}

TEST_CASE("Bad reconnect options are refused with the flag named", "[load][reconnect]") {
  ReconnectOptions o;
  o.enabled = true;
  o.jitter = 1.5;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("--reconnect-jitter"));
  o.jitter = 0.5;
  o.multiplier = 0.5;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("--reconnect-multiplier"));
  o.multiplier = 2;
  o.max = 10ms;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("--reconnect-initial"));
  // Checked without --auto-reconnect too: ws mode's comeback after a server
  // restart (close 1012) waits the same backoff.
  o.enabled = false;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("--reconnect-initial"));
  o.max = 30s;
  CHECK_NOTHROW(o.validate());
  o.jitter = 1.5;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("--reconnect-jitter"));
}

TEST_CASE("Reconnect statistics merge per second and keep the first loss and the last return",
          "[load][reconnect]") {
  LoadResult a, b;
  a.processes = b.processes = 1;
  ReconnectStats::count(a.reconnect.reconnects_per_s, 2);
  ReconnectStats::count(a.reconnect.reconnects_per_s, 2);
  ReconnectStats::count(b.reconnect.reconnects_per_s, 4);
  ReconnectStats::count(b.reconnect.losses_per_s, 1);
  a.reconnect.reconnects = 2;
  b.reconnect.reconnects = 1;
  a.reconnect.first_loss_ms = 1500;
  b.reconnect.first_loss_ms = 1200;
  a.reconnect.all_back_ms = 4100;
  b.reconnect.all_back_ms = 3900;
  a.reconnect.errors["ECONNREFUSED"] = 3;
  b.reconnect.errors["ECONNREFUSED"] = 4;
  LoadResult c;  // a worker that lost nothing does not pull first_loss to 0
  c.processes = 1;
  // Through the pipe's JSON, as the supervisor receives them.
  LoadResult merged = LoadResult::from_json(a.to_json());
  merged.merge(LoadResult::from_json(b.to_json()));
  merged.merge(LoadResult::from_json(c.to_json()));
  const auto& r = merged.reconnect;
  CHECK(r.reconnects == 3);
  CHECK(r.reconnects_per_s == ReconnectStats::Series{0, 0, 2, 0, 1});
  CHECK(r.losses_per_s == ReconnectStats::Series{0, 1});
  CHECK(r.first_loss_ms == 1200);
  CHECK(r.all_back_ms == 4100);
  CHECK(r.errors.at("ECONNREFUSED") == 7);
  const auto report = merged.report_json(3);
  CHECK(report["reconnect"]["reconnects_per_s"].size() == 5);
  CHECK(report["reconnect"]["first_loss_ms"] == 1200);
}
