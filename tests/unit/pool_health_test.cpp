// net::Pool's parts without sockets (pool_health.h, picker.h, pool_stats.h):
// outlier ejection and re-admission on virtual time, the ejection cap, the
// two pickers' shares, the stats table.
#include <heartwheel/net/picker.h>
#include <heartwheel/net/pool_health.h>
#include <heartwheel/net/pool_stats.h>
#include <heartwheel/timer/virtual_clock.h>

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <stdexcept>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::TimePoint;
using heartwheel::VirtualClock;
namespace net = heartwheel::net;
using net::EndpointState;

namespace {

net::OutlierOptions outlier() {
  net::OutlierOptions o;
  o.consecutive_failures = 3;
  o.base_ejection_time = 1s;
  o.max_ejection_time = 5s;
  return o;
}

}  // namespace

TEST_CASE(
    "An endpoint is ejected after consecutive failures, and a success in between starts the count "
    "again",
    "[pool][health]") {
  const auto o = outlier();
  net::EndpointHealth h;
  CHECK(h.state() == EndpointState::warming);
  CHECK_FALSE(h.pickable(true));
  h.warmed();
  CHECK(h.state() == EndpointState::healthy);
  CHECK_FALSE(h.note_failure(o));
  CHECK_FALSE(h.note_failure(o));
  h.note_success();
  CHECK(h.consecutive_failures() == 0);
  CHECK_FALSE(h.note_failure(o));
  CHECK_FALSE(h.note_failure(o));
  CHECK(h.note_failure(o));  // the third in a row
  VirtualClock clock;
  const TimePoint until = h.eject(clock.now(), o);
  CHECK(h.state() == EndpointState::ejected);
  CHECK(until == clock.now() + 1s);
  CHECK_FALSE(h.pickable(true));
  CHECK(h.counts_as_ejected());
}

TEST_CASE("Ejection time grows with repeated ejections up to the maximum, and decays while healthy",
          "[pool][health]") {
  const auto o = outlier();
  VirtualClock clock;
  net::EndpointHealth h;
  h.warmed();
  std::vector<heartwheel::Duration> times;
  for (int i = 0; i < 7; ++i) {
    const TimePoint until = h.eject(clock.now(), o);
    times.push_back(until - clock.now());
    clock.advance(until - clock.now());
    h.start_probe();  // and the probe fails at once: ejected again
  }
  CHECK(times == std::vector<heartwheel::Duration>{1s, 2s, 3s, 4s, 5s, 5s, 5s});
  // Re-admitted, then healthy for three base periods: the multiplier (7)
  // comes down by three, so the next ejection lasts 5 s (capped) ...
  h.readmit(clock.now());
  clock.advance(3s);
  CHECK(h.eject(clock.now(), o) - clock.now() == 5s);
  CHECK(h.ejection_count() == 5);
  // ... and after a long healthy stretch it starts over at the base.
  h.start_probe();
  h.readmit(clock.now());
  clock.advance(60s);
  CHECK(h.eject(clock.now(), o) - clock.now() == 1s);
  CHECK(h.ejection_count() == 1);
}

TEST_CASE("A probing endpoint takes one trial call at a time when the protocol has no ping",
          "[pool][health]") {
  const auto o = outlier();
  net::EndpointHealth h;
  h.warmed();
  h.eject(TimePoint{}, o);
  h.start_probe();
  CHECK(h.state() == EndpointState::probing);
  CHECK(h.pickable(true));         // trial calls
  CHECK_FALSE(h.pickable(false));  // a ping decides instead
  h.trial_started();
  CHECK_FALSE(h.pickable(true));  // one at a time
  h.readmit(TimePoint{} + 2s);
  CHECK(h.state() == EndpointState::healthy);
  CHECK(h.pickable(false));
  CHECK_FALSE(h.counts_as_ejected());
}

TEST_CASE("Failures of an endpoint that is not healthy do not eject it again", "[pool][health]") {
  const auto o = outlier();
  net::EndpointHealth h;
  for (int i = 0; i < 5; ++i) CHECK_FALSE(h.note_failure(o));  // warming
  h.warmed();
  h.eject(TimePoint{}, o);
  for (int i = 0; i < 5; ++i) CHECK_FALSE(h.note_failure(o));  // ejected
  h.drain();
  CHECK(h.state() == EndpointState::draining);
  CHECK_FALSE(h.note_failure(o));
  CHECK_FALSE(h.pickable(true));
}

TEST_CASE(
    "At most max_ejection_percent of the endpoints are ejected, one may always be, never the last",
    "[pool][health]") {
  net::OutlierOptions o;
  o.max_ejection_percent = 50;
  CHECK(o.ejection_cap(0) == 0);
  CHECK(o.ejection_cap(1) == 0);  // a sole endpoint stays: nowhere else to send
  CHECK(o.ejection_cap(2) == 1);
  CHECK(o.ejection_cap(3) == 1);
  CHECK(o.ejection_cap(4) == 2);
  CHECK(o.ejection_cap(10) == 5);
  o.max_ejection_percent = 0;
  CHECK(o.ejection_cap(10) == 1);
  o.max_ejection_percent = 100;
  CHECK(o.ejection_cap(3) == 2);
}

TEST_CASE("Outlier options that cannot work are refused with the field's name", "[pool][health]") {
  net::OutlierOptions o;
  o.base_ejection_time = 0s;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("base_ejection_time"));
  o = {};
  o.max_ejection_time = 1s;
  o.base_ejection_time = 2s;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("max_ejection_time"));
  o = {};
  o.max_ejection_percent = 101;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("max_ejection_percent"));
  o = {};
  o.probe_timeout = 0s;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("probe_timeout"));
  CHECK(o.ejection_time(1u << 30) == o.max_ejection_time);  // no overflow
}

TEST_CASE(
    "Round robin gives each endpoint its turn and goes on from the last one when the list changes",
    "[pool][picker]") {
  auto rr = net::make_round_robin_picker();
  std::array<net::EndpointLoad, 3> all{{{0, 0, 1}, {1, 0, 1}, {2, 0, 1}}};
  std::vector<std::size_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(all[rr->pick(all)].endpoint);
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 0, 1, 2});
  // Endpoint 1 is out, 2 was the last: 0, 2, 0; then 1 is back after 0: 1.
  std::array<net::EndpointLoad, 2> two{{{0, 0, 1}, {2, 0, 1}}};
  order.clear();
  for (int i = 0; i < 3; ++i) order.push_back(two[rr->pick(two)].endpoint);
  CHECK(order == std::vector<std::size_t>{0, 2, 0});
  CHECK(all[rr->pick(all)].endpoint == 1);
}

TEST_CASE("Power of two choices avoids the endpoint with more calls in flight", "[pool][picker]") {
  auto p2c = net::make_p2c_picker(42);
  // Endpoint 1 holds 10 calls, the others none: with three candidates it is
  // in two of every three draws, and loses each one.
  std::array<net::EndpointLoad, 3> loads{{{0, 0, 1}, {1, 10, 1}, {2, 0, 1}}};
  std::map<std::size_t, int> picked;
  for (int i = 0; i < 3000; ++i) ++picked[loads[p2c->pick(loads)].endpoint];
  CHECK(picked[1] == 0);
  CHECK(picked[0] > 1200);
  CHECK(picked[2] > 1200);
  // All equal: a fair share for each (ties go to the first drawn, at random).
  std::array<net::EndpointLoad, 3> even{{{0, 1, 1}, {1, 1, 1}, {2, 1, 1}}};
  picked.clear();
  for (int i = 0; i < 3000; ++i) ++picked[even[p2c->pick(even)].endpoint];
  for (std::size_t e = 0; e < 3; ++e) CHECK(picked[e] > 850);
  std::array<net::EndpointLoad, 1> one{{{7, 5, 1}}};
  CHECK(p2c->pick(one) == 0);
}

TEST_CASE("Balance names read back as written, and unknown ones are refused", "[pool][picker]") {
  net::Balance b;
  CHECK(net::parse_balance("round-robin", b));
  CHECK(b == net::Balance::round_robin);
  CHECK(std::string(net::to_string(b)) == "round-robin");
  CHECK(net::parse_balance("p2c", b));
  CHECK(b == net::Balance::p2c);
  CHECK_FALSE(net::parse_balance("random", b));
}

TEST_CASE("Endpoint stats merge field by field and print as one JSON object per endpoint",
          "[pool][stats]") {
  net::EndpointStats a, b;
  a.calls_ok = 3;
  a.ejections = 1;
  b.calls_ok = 4;
  b.calls_timed_out = 2;
  a.merge(b);
  CHECK(a.calls_ok == 7);
  CHECK(a.calls_timed_out == 2);
  CHECK(a.ejections == 1);
  std::vector<net::EndpointInfo> list{{0, "127.0.0.1:1", EndpointState::ejected, a}};
  const std::string json = net::to_json(list);
  CHECK(json.find(R"({"address":"127.0.0.1:1","state":"ejected","calls_ok":7,)") == 1);
  CHECK(json.find(R"("calls_timed_out":2)") != std::string::npos);
  CHECK(json.find(R"("ejections":1)") != std::string::npos);
  CHECK(json.back() == ']');
}
