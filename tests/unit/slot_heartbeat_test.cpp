// The heartbeat on a connection's ping / pong_timeout deadlines
// (SlotHeartbeat), driven by a byte protocol of its own, on a manual clock
// (heartwheel::testing::Host): a socket pair carries the bytes, a
// ManualTimerService the time, so no test here sleeps.
#include <heartwheel/net/connection.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/net/slot_heartbeat.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;
using namespace heartwheel::net;

namespace {

// "PING" / "PONG"; each connection's heartbeat state is the protocol's,
// kept here (a Connection carries none).
struct PingPongHandler final : Handler {
  explicit PingPongHandler(HeartbeatConfig c) : config(c) {}
  void on_open(Connection& c) override { beats[c.id()].start(c, config); }
  void on_data(Connection& c, std::string_view data) override {
    beats[c.id()].note_read(c);  // any byte is life
    if (data == "PING") {
      c.write("PONG");
      beats[c.id()].note_write(c.timers().now());
    }
  }
  DeadlineAction on_deadline(Connection& c, DeadlineEvent e) override {
    if (e.kind != Deadline::ping) return DeadlineAction::close;  // pong_timeout closes
    if (beats[c.id()].ping_due(c, config)) {
      c.write("PING");
      ++pings;
    }
    return DeadlineAction::keep;
  }
  void on_close(Connection&, CloseReason r, std::error_code) override { reason = r; }
  HeartbeatConfig config;
  std::map<std::uint64_t, SlotHeartbeat> beats;
  int pings = 0;
  CloseReason reason = CloseReason::local;
};

}  // namespace

TEST_CASE("Heartbeat configurations with a timeout under twice the interval are rejected",
          "[heartbeat]") {
  CHECK_NOTHROW(HeartbeatConfig{.interval = 10s}.validate());  // 3 x 10 s
  CHECK_NOTHROW(HeartbeatConfig{.interval = 10s, .timeout = 20s}.validate());
  CHECK_THROWS_WITH(HeartbeatConfig({.interval = 10s, .timeout = 15s}).validate(),
                    Catch::Contains("under twice the interval"));
  CHECK_THROWS_AS(HeartbeatConfig({.interval = 10s, .miss_limit = 1}).validate(),
                  std::invalid_argument);
  CHECK_THROWS_AS(HeartbeatConfig({.interval = Duration{0}}).validate(), std::invalid_argument);
  CHECK_THROWS_AS(HeartbeatConfig({.interval = 1s, .jitter = 1.5}).validate(),
                  std::invalid_argument);
  CHECK(HeartbeatConfig{.interval = 20s}.effective_timeout() == 60s);
}

TEST_CASE("A quiet connection is pinged every interval, and the peer's answer keeps it open",
          "[heartbeat]") {
  PingPongHandler handler({.interval = 1s, .jitter = 0});  // outlives the host
  Host host;
  auto& peer = host.open(handler);
  Connection* conn = peer.connection();
  CHECK(conn->deadline(Deadline::ping) == host.now() + 1s);
  host.run_for(999ms);
  CHECK(peer.received().empty());
  host.run_for(1ms);
  CHECK(peer.received() == "PING");
  CHECK(conn->deadline(Deadline::pong_timeout) == host.now() + 2s);  // last read + 3 s
  peer.send("PONG");
  CHECK(conn->deadline(Deadline::pong_timeout) == heartwheel::kNever);  // any byte clears it
  for (int i = 0; i < 5; ++i) {
    host.run_for(1s);
    peer.send("PONG");
  }
  CHECK(peer.open());
  CHECK(handler.pings == 6);
}

TEST_CASE("A peer silent for the timeout is closed as pong_timeout", "[heartbeat]") {
  PingPongHandler handler({.interval = 1s, .jitter = 0});  // outlives the host
  Host host;
  auto& peer = host.open(handler);
  host.run_for(2999ms);
  CHECK(peer.received() == "PINGPING");  // at 1 s and 2 s
  CHECK(peer.open());
  host.run_for(1ms);  // 3 s after the last byte read (the open)
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == CloseReason::pong_timeout);
  CHECK(handler.reason == CloseReason::pong_timeout);
  CHECK(host.stats().closed(CloseReason::pong_timeout) == 1);
  CHECK(host.stats().idle_events[static_cast<std::size_t>(Deadline::pong_timeout)] == 1);
}

TEST_CASE("Any bytes read keep a heartbeat connection alive", "[heartbeat]") {
  PingPongHandler handler({.interval = 1s, .jitter = 0});  // outlives the host
  Host host;
  auto& peer = host.open(handler);
  for (int i = 0; i < 10; ++i) {
    host.run_for(1500ms);
    peer.send("data");
  }
  CHECK(peer.open());
  CHECK(handler.pings >= 10);  // nothing written but pings: one every interval
}

TEST_CASE("First pings of connections opened together are spread by the jitter", "[heartbeat]") {
  PingPongHandler handler({.interval = 1s, .jitter = 0.5});
  Host host;  // after the handler: it must outlive the host
  constexpr int kConns = 40;
  std::vector<Peer*> peers;
  for (int i = 0; i < kConns; ++i) peers.push_back(&host.open(handler));
  // Sample who has pinged every 50 ms over the jitter window, [1 s, 1.5 s]
  // (the last sample at 1.549 s also sees a first deadline of exactly 1.5 s).
  std::vector<int> first_ping_step(kConns, -1);
  host.run_for(999ms);
  for (int step = 0; step <= 11; ++step) {
    for (int i = 0; i < kConns; ++i)
      if (first_ping_step[i] < 0 && !peers[i]->received().empty()) first_ping_step[i] = step;
    host.run_for(50ms);
  }
  std::set<int> distinct;
  for (int s : first_ping_step) {
    CHECK(s >= 0);  // everyone pinged within interval + jitter
    distinct.insert(s);
  }
  CHECK(distinct.size() >= 4);  // not all in the same instant
}
