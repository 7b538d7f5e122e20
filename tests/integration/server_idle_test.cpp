// Idle policy over loopback: read idle closes silent peers on time and spares
// chatty ones; write idle, all idle, max age and request deadlines fire as
// documented.
#include <heartwheel/net/server.h>

#include <algorithm>

#include "uv_idle_baseline.h"

#include "net_test_support.h"

using namespace hwtest;
using net::CloseReason;

namespace {

net::ServerOptions options_with(net::IdlePolicy idle) {
  net::ServerOptions o;
  o.connection.idle = idle;
  return o;
}

// The chatty peers here run in the server's own thread: on a loaded machine
// the whole process may not run for a while, and then the peer did not
// send either, so the server rightly finds it idle. A test that must spare
// a chatty peer gives it a timeout that leaves such a stall half a second
// (a 150 ms timeout beside 30 ms sends closed one in `tools/run-tests
// --stress`), and says the longest gap between its sends when it fails.
struct Cadence {
  Duration last{};
  Duration longest{};
  void sent() {
    const Duration now = hr_now();
    if (last != Duration{}) longest = std::max(longest, now - last);
    last = now;
  }
  long long longest_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(longest).count();
  }
};

}  // namespace

TEST_CASE("Silent clients close by read idle on time while chatty ones stay open", "[net][idle]") {
  constexpr Duration kIdle = 300ms;
  constexpr Duration kTick = 10ms;
  constexpr int kSilent = 150, kChatty = 150;
  TestLoop t(kTick);
  Recorder rec;
  net::Server server(*t.wheel, rec, options_with({.read_idle = kIdle}));
  REQUIRE_FALSE(server.listen());
  std::vector<std::unique_ptr<RawClient>> silent, chatty;
  for (int i = 0; i < kSilent; ++i)
    silent.push_back(std::make_unique<RawClient>(&t.loop, server.port()));
  for (int i = 0; i < kChatty; ++i)
    chatty.push_back(std::make_unique<RawClient>(&t.loop, server.port()));
  REQUIRE(t.run_until([&] { return server.connection_count() == kSilent + kChatty; }));

  // Chatty clients send every 100 ms (a third of the timeout) for 3 timeouts.
  const Duration start = hr_now();
  while (hr_now() - start < 3 * kIdle) {
    for (auto& c : chatty) c->send("ping");
    t.run_for(100ms);
  }
  REQUIRE(t.run_until([&] { return rec.closed >= static_cast<std::size_t>(kSilent); }));
  t.run_for(50ms);

  CHECK(rec.count_closed(CloseReason::read_idle) == kSilent);
  CHECK(server.stats().closed(CloseReason::read_idle) == kSilent);
  CHECK(server.connection_count() == kChatty);
  for (auto& [id, e] : rec.conns) {
    if (!e.closed) continue;
    const Duration lived = e.closed_at - e.opened_at;
    CHECK(lived >= kIdle - 1ms);  // uv_now() is cached to the millisecond
    // tick + loop latency; generous for a loaded 2-core machine
    CHECK(lived <= kIdle + kTick + 250ms);
  }
  for (auto& c : chatty) CHECK_FALSE(c->closed);
}

TEST_CASE("Write idle repeats with first=false until a write, then starts over", "[net][idle]") {
  TestLoop t(5ms);
  Recorder rec;
  rec.deadline_hook = [](net::Connection&, net::DeadlineEvent) { return net::DeadlineAction::keep; };
  net::Server server(*t.wheel, rec, options_with({.write_idle = 100ms}));
  REQUIRE_FALSE(server.listen());
  RawClient client(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 1; }));
  auto& events = rec.conns.begin()->second.idle;
  REQUIRE(t.run_until([&] { return events.size() >= 2; }));
  CHECK(events[0].kind == net::Deadline::write_idle);
  CHECK(events[0].first);
  CHECK(events[1].kind == net::Deadline::write_idle);
  CHECK_FALSE(events[1].first);
  client.send("x");  // echoed: a completed write
  REQUIRE(t.run_until([&] { return client.bytes_received == 1; }));
  const std::size_t before = events.size();
  REQUIRE(t.run_until([&] { return events.size() > before; }));
  CHECK(events[before].first);
  CHECK_FALSE(client.closed);
}

TEST_CASE("Write idle closes a connection the server never writes to", "[net][idle]") {
  TestLoop t(5ms);
  Recorder rec;
  rec.echo = false;  // reads, never writes
  net::Server server(*t.wheel, rec, options_with({.write_idle = 150ms}));
  REQUIRE_FALSE(server.listen());
  RawClient quiet(&t.loop, server.port());
  RawClient talker(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 2; }));
  for (int i = 0; i < 8; ++i) {  // reading does not count as writing
    talker.send("data");
    t.run_for(25ms);
  }
  REQUIRE(t.run_until([&] { return rec.closed == 2; }));
  CHECK(rec.count_closed(CloseReason::write_idle) == 2);
  for (auto& [id, e] : rec.conns) CHECK(e.closed_at - e.opened_at >= 149ms);
}

TEST_CASE("All idle needs silence in both directions", "[net][idle]") {
  constexpr Duration kIdle = 600ms;  // beside 40 ms sends: see Cadence
  TestLoop t(5ms);
  Recorder rec;
  net::Server server(*t.wheel, rec, options_with({.all_idle = kIdle}));
  REQUIRE_FALSE(server.listen());
  RawClient silent(&t.loop, server.port());
  RawClient echoing(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 2; }));
  const Duration start = hr_now();
  Cadence cadence;
  // Until the silent one is closed, and the echoing one has outlived the
  // time it would have had if it were silent too.
  while (!silent.closed || hr_now() - start < kIdle + 100ms) {
    REQUIRE(hr_now() - start < 10s);
    echoing.send("x");
    cadence.sent();
    t.run_for(40ms);
  }
  INFO("longest gap between the echoing peer's sends: " << cadence.longest_ms() << " ms");
  CHECK_FALSE(echoing.closed);
  CHECK(server.stats().closed(CloseReason::all_idle) == 1);
}

TEST_CASE("Max age closes even a busy connection on time", "[net][idle]") {
  TestLoop t(5ms);
  Recorder rec;
  net::Server server(*t.wheel, rec, options_with({.read_idle = 5s, .max_age = 200ms}));
  REQUIRE_FALSE(server.listen());
  RawClient busy(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 1; }));
  while (!busy.closed && rec.closed == 0) {
    busy.send("x");
    t.run_for(20ms);
    REQUIRE(hr_now() - rec.conns.begin()->second.opened_at < 2s);
  }
  REQUIRE(t.run_until([&] { return rec.closed == 1; }));
  const auto& e = rec.conns.begin()->second;
  CHECK(e.reason == CloseReason::max_age);
  CHECK(e.closed_at - e.opened_at >= 199ms);
  CHECK(e.closed_at - e.opened_at <= 200ms + 5ms + 250ms);
}

TEST_CASE("A request deadline fires request_timeout unless the request ends first", "[net][idle]") {
  TestLoop t(5ms);
  Recorder rec;
  // "slow" begins a request and never ends it; "fast" begins and ends at once.
  rec.data_hook = [](net::Connection& c, std::string_view data) {
    c.begin_request(150ms);
    if (data == "fast") c.end_request();
  };
  net::Server server(*t.wheel, rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  RawClient slow(&t.loop, server.port());
  RawClient fast(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 2; }));
  slow.send("slow");
  fast.send("fast");
  REQUIRE(t.run_until([&] { return rec.closed == 1; }));
  t.run_for(200ms);
  CHECK(slow.closed);
  CHECK_FALSE(fast.closed);
  CHECK(server.stats().closed(CloseReason::request_timeout) == 1);
  CHECK(server.stats().idle_events[static_cast<std::size_t>(net::Deadline::request_timeout)] == 1);
}

TEST_CASE("Eager refresh and the uv_timer baseline close silent peers like lazy refresh",
          "[net][idle]") {
  const auto refresh = GENERATE(net::RefreshMode::lazy, net::RefreshMode::eager);
  const bool uv = GENERATE(false, true);  // heartwheel-echo --timers uv (tools/bench-common)
  INFO("refresh " << (refresh == net::RefreshMode::lazy ? "lazy" : "eager") << ", timers "
                  << (uv ? "uv" : "wheel"));
  constexpr Duration kIdle = 600ms;  // beside 30 ms sends: see Cadence
  TestLoop t(5ms);
  Recorder rec;
  net::ServerOptions o = options_with({.read_idle = kIdle, .refresh = refresh});
  heartwheel::bench::UvIdleBaseline baseline(o.connection.idle, 1);
  std::unique_ptr<net::Handler> wrapped;
  if (uv) {
    o.connection.idle = baseline.net_policy();
    wrapped = baseline.wrap(rec);
  }
  net::Server server(*t.wheel, uv ? *wrapped : rec, o);
  REQUIRE_FALSE(server.listen());
  RawClient silent(&t.loop, server.port());
  RawClient chatty(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 2; }));
  const Duration start = hr_now();
  Cadence cadence;
  // Until the silent one is closed, and the chatty one has outlived the
  // time it would have had if it were silent too.
  while (!silent.closed || hr_now() - start < kIdle + 100ms) {
    REQUIRE(hr_now() - start < 10s);
    chatty.send("x");
    cadence.sent();
    t.run_for(30ms);
  }
  INFO("longest gap between the chatty peer's sends: " << cadence.longest_ms() << " ms");
  CHECK_FALSE(chatty.closed);
  const auto& first = rec.conns.begin()->second;
  CHECK(first.closed_at - first.opened_at >= kIdle - 1ms);
  CHECK(first.reason == net::CloseReason::read_idle);
  REQUIRE(first.idle.size() == 1);
  CHECK(first.idle[0].kind == net::Deadline::read_idle);
  CHECK(first.idle[0].first);
  if (uv) {
    CHECK(t.wheel->wheel().stats().scheduled == 0);  // no connection used the wheel
    // Its own counters, as heartwheel-echo reports them.
    baseline.publish(0, *wrapped);
    const net::LoopSnapshot s = baseline.add_to({});
    CHECK(s.net.idle_events[static_cast<std::size_t>(net::Deadline::read_idle)] == 1);
    CHECK(s.net.timer_fires() >= 1);
  }
  // The chatty peer ends, so its connection closes through on_close: the
  // baseline's per-connection timer goes with it. A server destroyed with it
  // open abandons it without on_close, and that timer would fire on a freed
  // connection (AddressSanitizer saw it).
  chatty.shutdown_write();
  REQUIRE(t.run_until([&] { return server.connection_count() == 0; }));
}

TEST_CASE("Mass expiry is spread over loop iterations by the wheel's budget", "[net][idle]") {
  constexpr int kClients = 300;
  TestLoop t(20ms, 20);  // coarse ticks gather deadlines; at most 20 expiries per iteration
  Recorder rec;
  net::Server server(*t.wheel, rec, options_with({.read_idle = 150ms}));
  REQUIRE_FALSE(server.listen());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kClients; ++i)
    clients.push_back(std::make_unique<RawClient>(&t.loop, server.port()));
  REQUIRE(t.run_until([&] { return server.connection_count() == kClients; }));
  REQUIRE(t.run_until([&] { return rec.closed == kClients; }));
  CHECK(server.stats().closed(CloseReason::read_idle) == kClients);
  CHECK(t.wheel->budget_exhausted() > 0);
  // Spreading costs lateness, and the wheel measures it.
  CHECK(t.wheel->wheel().stats().max_lateness > Duration{0});
}
