// The reconnecting client: backoff while the server is gone, reconnect when
// it is back on the same port, and client-side heartbeats.
#include <heartwheel/net/connector.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/net/server.h>
#include <heartwheel/net/slot_heartbeat.h>
#include <netinet/tcp.h>

#include "net_test_support.h"

using namespace hwtest;
using net::CloseReason;

namespace {

struct ClientRecorder : net::Handler {
  void on_open(net::Connection& c) override {
    ++opened;
    if (open_hook) open_hook(c);
  }
  void on_data(net::Connection& c, std::string_view d) override {
    received.append(d);
    if (data_hook) data_hook(c, d);
  }
  net::DeadlineAction on_deadline(net::Connection& c, net::DeadlineEvent e) override {
    return deadline_hook ? deadline_hook(c, e) : net::DeadlineAction::close;
  }
  void on_close(net::Connection&, CloseReason r, std::error_code) override {
    ++closed;
    last_reason = r;
  }
  int opened = 0, closed = 0;
  CloseReason last_reason = CloseReason::local;
  std::string received;
  std::function<void(net::Connection&)> open_hook;
  std::function<void(net::Connection&, std::string_view)> data_hook;
  std::function<net::DeadlineAction(net::Connection&, net::DeadlineEvent)> deadline_hook;
};

}  // namespace

TEST_CASE("Backoff delays grow exponentially up to the maximum", "[net][connector]") {
  net::ConnectorOptions o;
  o.backoff_initial = 100ms;
  o.backoff_max = 1s;
  o.backoff_multiplier = 2;
  CHECK(o.backoff(1) == 100ms);
  CHECK(o.backoff(2) == 200ms);
  CHECK(o.backoff(4) == 800ms);
  CHECK(o.backoff(5) == 1s);
  CHECK(o.backoff(50) == 1s);
}

TEST_CASE("A client reconnects with backoff and jitter when the server restarts on the same port",
          "[net][connector]") {
  TestLoop t(5ms);
  Recorder server_rec;
  auto server = std::make_unique<net::Server>(*t.wheel, server_rec, net::ServerOptions{});
  REQUIRE_FALSE(server->listen());
  const int port = server->port();

  std::vector<Duration> delays;
  net::ConnectorOptions co;
  co.port = port;
  co.backoff_initial = 20ms;
  co.backoff_max = 200ms;
  co.backoff_jitter = 0.2;
  // The first connection lives only a few ms; this test is about the backoff
  // after a server loss, so it must not count as a failed attempt itself.
  co.stable_after = Duration{0};
  co.on_connect_error = [&](std::error_code, Duration next) { delays.push_back(next); };
  ClientRecorder client_rec;
  net::Connector client(*t.wheel, client_rec, co);
  client.start();
  REQUIRE(t.run_until([&] { return client.connected(); }));
  client.connection()->write("hello");
  REQUIRE(t.run_until([&] { return client_rec.received == "hello"; }));

  // The server goes away: the client sees the close and keeps trying.
  server->close_all(CloseReason::local);
  server.reset();
  REQUIRE(t.run_until([&] { return delays.size() >= 5; }));
  CHECK(client_rec.closed == 1);
  CHECK_FALSE(client.connected());
  for (std::size_t i = 0; i < delays.size(); ++i) {
    const Duration nominal = co.backoff(static_cast<unsigned>(i + 1));
    CHECK(delays[i] <= nominal);
    CHECK(delays[i] >= nominal * 0.79);
  }
  CHECK(delays[3] > delays[0]);

  // Back on the same port: the client finds it without help.
  net::ServerOptions so;
  so.port = port;
  server = std::make_unique<net::Server>(*t.wheel, server_rec, so);
  REQUIRE_FALSE(server->listen());
  REQUIRE(t.run_until([&] { return client.connected(); }, 5s));
  CHECK(client_rec.opened == 2);
  CHECK(client.failures() == 0);
  client_rec.received.clear();
  client.connection()->write("again");
  REQUIRE(t.run_until([&] { return client_rec.received == "again"; }));
  client.stop();
  REQUIRE(t.run_until([&] { return client_rec.closed == 2; }));
  CHECK(client.stats().connect_failures >= 5);
}

TEST_CASE("Client heartbeats get answers, detect a dead server by its silence and reconnect",
          "[net][connector][heartbeat]") {
  TestLoop t(5ms);
  // The server answers PING with PONG while `alive`, then goes silent.
  bool alive = true;
  Recorder server_rec;
  server_rec.data_hook = [&](net::Connection& c, std::string_view d) {
    if (alive && d == "PING") c.write("PONG");
  };
  net::Server server(*t.wheel, server_rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());

  const net::HeartbeatConfig hb{.interval = 50ms, .miss_limit = 3, .jitter = 0.2};
  net::ConnectorOptions co;
  co.port = server.port();
  co.backoff_initial = 20ms;
  ClientRecorder client_rec;
  // The protocol keeps the heartbeat state (start() resets it for each
  // connection): pings on the connection's ping deadline, a dead peer found
  // by its pong_timeout deadline (net::SlotHeartbeat).
  net::SlotHeartbeat beat;
  Duration ping_sent{-1};
  Duration rtt{-1};
  client_rec.open_hook = [&](net::Connection& c) { beat.start(c, hb); };
  client_rec.data_hook = [&](net::Connection& c, std::string_view d) {
    beat.note_read(c);
    if (d == "PONG" && ping_sent.count() >= 0) rtt = hr_now() - ping_sent;
  };
  client_rec.deadline_hook = [&](net::Connection& c, net::DeadlineEvent e) {
    if (e.kind != net::Deadline::ping) return net::DeadlineAction::close;  // pong_timeout
    if (beat.ping_due(c, hb)) {
      ping_sent = hr_now();
      c.write("PING");
    }
    return net::DeadlineAction::keep;
  };
  net::Connector client(*t.wheel, client_rec, co);
  client.start();
  REQUIRE(t.run_until([&] { return client.connected() && rtt.count() >= 0; }));
  CHECK(rtt < 100ms);
#ifdef TCP_USER_TIMEOUT
  {  // the kernel gives up on unacknowledged data after the heartbeat timeout too
    uv_os_fd_t fd;
    REQUIRE(uv_fileno(reinterpret_cast<uv_handle_t*>(client.connection()->handle()), &fd) == 0);
    unsigned ms = 0;
    socklen_t len = sizeof ms;
    REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, &len) == 0);
    CHECK(ms == 150);
  }
#endif
  t.run_for(300ms);  // pings flow, pongs answer: no close
  CHECK(client_rec.closed == 0);
  alive = false;  // the server stops answering (and sends nothing else)
  const Duration silent_from = hr_now();
  REQUIRE(t.run_until([&] { return client_rec.closed == 1; }));
  CHECK(client_rec.last_reason == CloseReason::pong_timeout);
  CHECK(hr_now() - silent_from <= 150ms + 60ms + 200ms);
  REQUIRE(t.run_until([&] { return client_rec.opened == 2; }));  // reconnected
  client.stop();
}

TEST_CASE("Connectors can share one options object and one statistics set", "[net][connector]") {
  TestLoop t(5ms);
  Recorder server_rec;
  net::Server server(*t.wheel, server_rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  auto options = std::make_shared<net::ConnectorOptions>();
  options->port = server.port();
  options->reconnect = false;
  net::NetStats shared;
  ClientRecorder rec;
  std::vector<std::unique_ptr<net::Connector>> clients;
  for (int i = 0; i < 20; ++i) {
    clients.push_back(std::make_unique<net::Connector>(*t.wheel, rec, options, &shared));
    clients.back()->start();
  }
  REQUIRE(t.run_until([&] { return shared.current == 20; }));
  CHECK(shared.accepted == 20);
  CHECK(shared.peak == 20);
  for (auto& c : clients) CHECK(c->connects() == 1);
  CHECK(&clients[0]->stats() == &shared);
  for (int i = 0; i < 10; ++i) clients[i]->stop();
  REQUIRE(t.run_until([&] { return shared.current == 10; }));
  CHECK(shared.closed(CloseReason::local) == 10);
  clients.clear();  // destroyed while connected: closed without callbacks
  CHECK(shared.current == 0);
  CHECK(sizeof(net::Connector) <= 160);
}

namespace {
// A server at its limit: accepts and closes every connection at once.
struct CloseAtOnce : net::Handler {
  void on_open(net::Connection& c) override {
    ++accepted;
    c.close(CloseReason::limit);
  }
  void on_data(net::Connection&, std::string_view) override {}
  int accepted = 0;
};

// Connects a client with `stable_after` to such a server for 1.5 s; returns
// how often it got in. With `prompt` the client calls reconnect_promptly()
// on each open, as ws::Client does at a close 1012 (a restarting server).
int connects_in_a_while(Duration stable_after, bool prompt = false) {
  TestLoop t(1ms);
  CloseAtOnce server_handler;
  net::Server server(*t.wheel, server_handler, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  net::ConnectorOptions co;
  co.port = server.port();
  co.backoff_initial = 20ms;
  co.backoff_max = 5s;
  co.backoff_jitter = 0;
  co.stable_after = stable_after;
  ClientRecorder rec;
  net::Connector client(*t.wheel, rec, co);
  if (prompt) rec.open_hook = [&](net::Connection&) { client.reconnect_promptly(); };
  client.start();
  t.run_for(1500ms);
  client.stop();
  return static_cast<int>(client.connects());
}
}  // namespace

TEST_CASE("A connection closed right after it opened makes the backoff grow, not reset",
          "[net][connector]") {
  // Counted as failures, the waits grow 20, 40, 80 ... 640 ms: 7 connects in
  // 1.5 s. Reset on every open (stable_after 0, the old rule), the client is
  // back every ~20 ms: dozens.
  const int growing = connects_in_a_while(1s);
  const int hammering = connects_in_a_while(Duration{0});
  INFO("growing " << growing << ", hammering " << hammering);
  CHECK(growing >= 3);
  CHECK(growing <= 9);
  CHECK(hammering >= 25);
}

TEST_CASE("A connection closed soon after reconnect_promptly() is not a failed attempt",
          "[net][connector]") {
  // The same server, stable_after 1 s, but the client was asked to come back
  // at once (reconnect_promptly): every close is followed by the initial
  // 20 ms, as with stable_after 0, and failures() stays 0.
  const int prompt = connects_in_a_while(1s, true);
  INFO("prompt " << prompt);
  CHECK(prompt >= 25);
}

TEST_CASE("A connection that stayed open resets the backoff to the initial delay",
          "[net][connector]") {
  TestLoop t(1ms);
  Recorder server_rec;
  net::Server server(*t.wheel, server_rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  net::ConnectorOptions co;
  co.port = server.port();
  co.backoff_initial = 20ms;
  co.backoff_jitter = 0;
  co.stable_after = 100ms;
  ClientRecorder rec;
  net::Connector client(*t.wheel, rec, co);
  client.start();
  REQUIRE(t.run_until([&] { return client.connected(); }));
  t.run_for(200ms);  // longer than stable_after
  client.connection()->close(CloseReason::local);  // not stop(): the connector reconnects
  REQUIRE(t.run_until([&] { return rec.closed == 1; }));
  const auto closed_at = hr_now();
  REQUIRE(t.run_until([&] { return rec.opened == 2; }));
  CHECK(hr_now() - closed_at < 500ms);  // the initial 20 ms, not a grown delay
  CHECK(client.failures() == 0);
  client.stop();
}
