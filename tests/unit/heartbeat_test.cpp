// The heartbeat helper and a Connection driven by a manual clock
// (heartwheel::testing::Host): a socket pair carries the bytes, a
// ManualTimerService the time, so no test here sleeps.
#include <heartwheel/net/connection.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>

#include <set>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;
using namespace heartwheel::net;

namespace {

// Serves one connection; the heartbeat state is the protocol's, kept here.
struct PingPongHandler final : Handler {
  explicit PingPongHandler(const Heartbeat& hb) : heartbeat(hb) {}
  void on_data(Connection& c, std::string_view data) override {
    if (data == "PONG") heartbeat.on_pong(c, state);
  }
  DeadlineAction on_deadline(Connection& c, DeadlineEvent e) override {
    return heartbeat.on_deadline(c, e, state);
  }
  void on_close(Connection&, CloseReason r, std::error_code) override { reason = r; }
  const Heartbeat& heartbeat;
  HeartbeatState state;
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
  CHECK_THROWS_AS(Heartbeat(HeartbeatConfig{}, nullptr), std::invalid_argument);
}

TEST_CASE("A heartbeat maps to write idle = interval and read idle = miss_limit intervals",
          "[heartbeat]") {
  Heartbeat hb({.interval = 20s, .jitter = 0.5}, [](Connection&) {});
  const IdlePolicy p = hb.idle_policy({.all_idle = 5min});
  CHECK(p.write_idle == 20s);
  CHECK(p.read_idle == 60s);
  CHECK(p.jitter == 10s);
  CHECK(p.all_idle == 5min);  // kept
  CHECK(hb.connection_options().tcp_user_timeout == 60s);
}

TEST_CASE("A write-idle connection gets a ping, a pong measures the round trip", "[heartbeat]") {
  Heartbeat hb({.interval = 1s, .jitter = 0}, [](Connection& c) { c.write("PING"); });
  PingPongHandler handler(hb);  // outlives the host, whose destructor closes what is open
  Host host(hb.connection_options());
  auto& peer = host.open(handler);
  Connection* conn = peer.connection();
  host.run_for(999ms);
  CHECK(peer.received().empty());
  host.run_for(1ms);
  CHECK(peer.received() == "PING");
  CHECK(handler.state.awaiting_pong);
  host.run_for(30ms);
  peer.send("PONG");
  CHECK_FALSE(handler.state.awaiting_pong);
  CHECK(handler.state.last_rtt == 30ms);
  conn->close();
  host.poll();
  CHECK_FALSE(peer.open());
}

TEST_CASE("A peer silent for miss_limit intervals is closed as read idle", "[heartbeat]") {
  Heartbeat hb({.interval = 1s, .jitter = 0}, [](Connection& c) { c.write("PING"); });
  PingPongHandler handler(hb);  // outlives the host, whose destructor closes what is open
  Host host(hb.connection_options());
  auto& peer = host.open(handler);
  host.run_for(2999ms);
  CHECK(peer.received() == "PINGPING");  // at 1 s and 2 s
  CHECK(handler.state.pings_sent == 2);
  host.run_for(1ms);
  CHECK(peer.close_reason() == CloseReason::read_idle);
  CHECK(handler.reason == CloseReason::read_idle);
  CHECK(host.stats().closed(CloseReason::read_idle) == 1);
}

TEST_CASE("Any bytes read keep a heartbeat connection alive", "[heartbeat]") {
  Heartbeat hb({.interval = 1s, .jitter = 0}, [](Connection& c) { c.write("PING"); });
  PingPongHandler handler(hb);  // outlives the host, whose destructor closes what is open
  Host host(hb.connection_options());
  auto& peer = host.open(handler);
  for (int i = 0; i < 10; ++i) {
    host.run_for(1500ms);
    peer.send("data");
  }
  CHECK(peer.open());
  CHECK(handler.state.pings_sent >= 10);
}

TEST_CASE("An idle Connection stays under 544 bytes of user space", "[memory]") {
  // The socket handle is 248 bytes of it, the deadline set (every timeout of
  // every protocol, one wheel entry) 112; write queues exist only while
  // bytes are pending, reads share one buffer per loop thread, and protocol
  // state (RPC heartbeats included) lives in the protocol's handler.
  CHECK(sizeof(uv_tcp_t) == 248);
  CHECK(sizeof(Connection) <= 528);  // malloc adds 8: one 544-byte chunk
  WARN("sizeof(Connection) = " << sizeof(Connection));
}

TEST_CASE("First pings of connections opened together are spread by the jitter", "[heartbeat]") {
  Heartbeat hb({.interval = 1s, .jitter = 0.5}, [](Connection& c) { c.write("PING"); });
  struct Quiet final : Handler {
    explicit Quiet(const Heartbeat& h) : hb(h) {}
    void on_data(Connection&, std::string_view) override {}
    DeadlineAction on_deadline(Connection& c, DeadlineEvent e) override {
      HeartbeatState state;  // only the pings are watched here
      return hb.on_deadline(c, e, state);
    }
    const Heartbeat& hb;
  } handler(hb);
  Host host(hb.connection_options());  // after the handler: it must outlive the host
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
