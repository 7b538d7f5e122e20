// The heartbeat helper and a Connection driven by a manual clock: a real
// socket pair carries the bytes, ManualTimerService carries the time, so no
// test here sleeps.
#include <heartwheel/net/connection.h>
#include <heartwheel/net/heartbeat.h>

#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "unit/manual_host.h"

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::ManualTimerService;
using namespace heartwheel::net;
using manual::drain;
using manual::ManualHost;
using manual::open_on_socketpair;

namespace {

struct PingPongHandler final : Handler {
  explicit PingPongHandler(const Heartbeat& hb) : heartbeat(hb) {}
  void on_data(Connection& c, std::string_view data) override {
    if (data == "PONG") heartbeat.on_pong(c);
  }
  IdleAction on_idle(Connection& c, IdleEvent e) override { return heartbeat.on_idle(c, e); }
  void on_close(Connection&, CloseReason r, std::error_code) override { reason = r; }
  const Heartbeat& heartbeat;
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
  ManualHost host(hb.connection_options());
  PingPongHandler handler(hb);
  Connection* conn = nullptr;
  const int peer = open_on_socketpair(host, conn, handler);
  host.timers.run_for(999ms);
  CHECK(drain(peer).empty());
  host.timers.run_for(1ms);
  CHECK(drain(peer) == "PING");
  CHECK(conn->heartbeat().awaiting_pong);
  host.timers.run_for(30ms);
  REQUIRE(::write(peer, "PONG", 4) == 4);
  uv_run(&host.loop, UV_RUN_NOWAIT);
  CHECK_FALSE(conn->heartbeat().awaiting_pong);
  CHECK(conn->heartbeat().last_rtt == 30ms);
  conn->close();
  uv_run(&host.loop, UV_RUN_DEFAULT);
  CHECK(host.closed);
  ::close(peer);
}

TEST_CASE("A peer silent for miss_limit intervals is closed as read idle", "[heartbeat]") {
  Heartbeat hb({.interval = 1s, .jitter = 0}, [](Connection& c) { c.write("PING"); });
  ManualHost host(hb.connection_options());
  PingPongHandler handler(hb);
  Connection* conn = nullptr;
  const int peer = open_on_socketpair(host, conn, handler);
  host.timers.run_for(2999ms);
  CHECK(drain(peer) == "PINGPING");  // at 1 s and 2 s
  CHECK(conn->heartbeat().pings_sent == 2);
  host.timers.run_for(1ms);
  uv_run(&host.loop, UV_RUN_DEFAULT);
  CHECK(host.closed);
  CHECK(handler.reason == CloseReason::read_idle);
  CHECK(host.stats.closed(CloseReason::read_idle) == 1);
  ::close(peer);
}

TEST_CASE("Any bytes read keep a heartbeat connection alive", "[heartbeat]") {
  Heartbeat hb({.interval = 1s, .jitter = 0}, [](Connection& c) { c.write("PING"); });
  ManualHost host(hb.connection_options());
  PingPongHandler handler(hb);
  Connection* conn = nullptr;
  const int peer = open_on_socketpair(host, conn, handler);
  for (int i = 0; i < 10; ++i) {
    host.timers.run_for(1500ms);
    REQUIRE(::write(peer, "data", 4) == 4);
    uv_run(&host.loop, UV_RUN_NOWAIT);
  }
  CHECK_FALSE(host.closed);
  CHECK(conn->heartbeat().pings_sent >= 10);
  conn->close();
  uv_run(&host.loop, UV_RUN_DEFAULT);
  ::close(peer);
}

TEST_CASE("An idle Connection stays under 512 bytes of user space", "[memory]") {
  // The socket handle is 248 bytes of it; write queues exist only while
  // bytes are pending, and reads share one buffer per loop thread.
  CHECK(sizeof(uv_tcp_t) == 248);
  CHECK(sizeof(Connection) <= 504);  // malloc adds 8: one 512-byte chunk
  WARN("sizeof(Connection) = " << sizeof(Connection));
}

TEST_CASE("First pings of connections opened together are spread by the jitter", "[heartbeat]") {
  Heartbeat hb({.interval = 1s, .jitter = 0.5}, [](Connection& c) { c.write("PING"); });
  ManualHost host(hb.connection_options());
  struct Quiet final : Handler {
    explicit Quiet(const Heartbeat& h) : hb(h) {}
    void on_data(Connection&, std::string_view) override {}
    IdleAction on_idle(Connection& c, IdleEvent e) override { return hb.on_idle(c, e); }
    const Heartbeat& hb;
  } handler(hb);
  constexpr int kConns = 40;
  std::vector<int> peers;
  std::vector<Connection*> conns;
  for (int i = 0; i < kConns; ++i) {
    Connection* c = nullptr;
    peers.push_back(open_on_socketpair(host, c, handler));
    conns.push_back(c);
  }
  // Sample who has pinged every 50 ms over the jitter window.
  std::vector<int> first_ping_step(kConns, -1);
  host.timers.run_for(999ms);
  for (int step = 0; step <= 10; ++step) {
    for (int i = 0; i < kConns; ++i)
      if (first_ping_step[i] < 0 && !drain(peers[i]).empty()) first_ping_step[i] = step;
    host.timers.run_for(50ms);
  }
  std::set<int> distinct;
  for (int s : first_ping_step) {
    CHECK(s >= 0);  // everyone pinged within interval + jitter
    distinct.insert(s);
  }
  CHECK(distinct.size() >= 4);  // not all in the same instant
  for (Connection* c : conns) c->close();
  uv_run(&host.loop, UV_RUN_DEFAULT);
  for (int fd : peers) ::close(fd);
}
