// ws::Client against real servers on loopback: python3-websockets
// (ws_backend.py, under /usr/bin/python3) and heartwheel-chat: the opening
// handshake with a subprotocol, text and binary messages both ways, a large
// message, the server's pings answered, close codes, a refused handshake
// retried with backoff, a frozen server found by the pong timeout and the
// client back once it thaws, heartwheel-chat's restart (close 1012) taken
// cleanly and the client back on the successor.
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/ws/client.h>
#include <uv.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loop_runner.h"
#include "process_support.h"

#ifndef HEARTWHEEL_WS_BACKEND
#error "HEARTWHEEL_WS_BACKEND must name tests/integration/ws_backend.py"
#endif
#ifndef HEARTWHEEL_CHAT_BIN
#error "HEARTWHEEL_CHAT_BIN must name the built heartwheel-chat"
#endif

using namespace hwproc;
using namespace std::chrono_literals;
namespace ws = heartwheel::ws;
namespace net = heartwheel::net;

namespace {

// What a client saw.
struct Recorder final : ws::ClientHandler {
  void on_open(ws::Client&, const ws::ClientHandshake& h) override {
    ++opens;
    subprotocol = h.subprotocol();
  }
  void on_message(ws::Client&, ws::MessageType t, std::string& m) override {
    messages.push_back(m);
    binary = t == ws::MessageType::binary;
  }
  void on_ping(ws::Client&, std::string_view) override { ++pings; }
  void on_pong(ws::Client&, std::string_view) override { ++pongs; }
  void on_handshake_failed(ws::Client&, const ws::ClientHandshake& h) override {
    ++refused;
    refused_status = h.status();
    refused_why = h.error();
  }
  void on_close(ws::Client&, const ws::ClientCloseInfo& i) override {
    closes.push_back(i);
    reasons.emplace_back(i.reason);
  }
  int opens = 0, pings = 0, pongs = 0, refused = 0, refused_status = 0;
  bool binary = false;
  std::string subprotocol, refused_why;
  std::vector<std::string> messages;
  std::vector<ws::ClientCloseInfo> closes;
  std::vector<std::string> reasons;
};

class Harness {
 public:
  explicit Harness(ws::ClientOptions o) {
    REQUIRE(uv_loop_init(&loop_) == 0);
    wheel_.emplace(&loop_);
    client_.emplace(*wheel_, rec, std::move(o));
    client_->start();
  }
  ~Harness() {
    client_->stop();
    run_until([&] { return client_->connection() == nullptr; }, Ms(3000));
    client_.reset();
    wheel_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }
  template <class Pred>
  bool run_until(Pred done, Ms limit) {
    return hwtest::run_loop_until(loop_, done, limit);
  }
  ws::Client& client() { return *client_; }
  Recorder rec;

 private:
  uv_loop_t loop_{};
  std::optional<heartwheel::LoopWheel> wheel_;
  std::optional<ws::Client> client_;
};

struct Backend {
  Backend()
      : child({"/usr/bin/python3", HEARTWHEEL_WS_BACKEND}), port(child.wait_listening(Ms(20000))) {
    REQUIRE(port > 0);
    address = "127.0.0.1:" + std::to_string(port);
  }
  Child child;
  int port;
  std::string address;
};

ws::ClientOptions options_for(const std::string& address, const std::string& path = "/") {
  ws::ClientOptions o;
  o.address = address;
  o.handshake.path = path;
  o.connector.backoff_initial = 20ms;
  o.connector.backoff_max = 200ms;
  return o;
}

}  // namespace

TEST_CASE(
    "A WebSocket client talks to python websockets: subprotocol, messages both ways, close codes",
    "[ws][client][websockets]") {
  Watchdog dog(Ms(60000));
  Backend backend;
  auto o = options_for(backend.address, "/echo");
  o.handshake.subprotocols = {"nope", "chat.v2"};
  Harness h(o);
  auto& r = h.rec;
  REQUIRE(h.run_until([&] { return h.client().is_open(); }, Ms(10000)));
  CHECK(r.subprotocol == "chat.v2");
  CHECK_FALSE(h.client().send_text("héllo"));
  REQUIRE(h.run_until([&] { return r.messages.size() == 1; }, Ms(5000)));
  CHECK(r.messages[0] == "héllo");
  CHECK_FALSE(r.binary);
  CHECK_FALSE(h.client().send_binary(std::string("\x00\x01\xff", 3)));
  const std::string big(300000, 'z');  // several frames' worth on the wire
  CHECK_FALSE(h.client().send_text(big));
  REQUIRE(h.run_until([&] { return r.messages.size() == 3; }, Ms(5000)));
  CHECK(r.messages[1] == std::string("\x00\x01\xff", 3));
  CHECK(r.messages[2] == big);
  CHECK_FALSE(h.client().ping("are you there"));
  REQUIRE(h.run_until([&] { return r.pongs == 1; }, Ms(5000)));

  // The server closes with its own code: reported, then a new connection.
  CHECK_FALSE(h.client().send_text("close-me"));
  REQUIRE(h.run_until([&] { return r.closes.size() == 1; }, Ms(5000)));
  CHECK(r.closes[0].code == 4001);
  CHECK(r.reasons[0] == "asked");
  CHECK(r.closes[0].was_open);
  REQUIRE(h.run_until([&] { return r.opens == 2 && h.client().is_open(); }, Ms(5000)));

  // We close: the server answers, no reconnect after stop().
  h.client().stop();
  REQUIRE(h.run_until([&] { return r.closes.size() == 2; }, Ms(5000)));
  CHECK(r.closes[1].sent_code == ws::kCloseNormal);
  CHECK(r.closes[1].code == ws::kCloseNormal);
  CHECK(r.closes[1].net_reason == net::CloseReason::protocol_close);
  h.run_until([] { return false; }, Ms(200));
  CHECK(r.opens == 2);
}

TEST_CASE("A refused WebSocket handshake is reported and retried with a growing backoff",
          "[ws][client][websockets]") {
  Watchdog dog(Ms(60000));
  Backend backend;
  Harness h(options_for(backend.address, "/forbidden"));
  auto& r = h.rec;
  REQUIRE(h.run_until([&] { return r.refused >= 3 && r.closes.size() >= 3; }, Ms(10000)));
  CHECK(r.refused_status == 403);
  CHECK(r.refused_why.find("403") != std::string::npos);
  CHECK(r.opens == 0);
  CHECK(h.client().connector().failures() >= 2);  // each refusal counts: the backoff grows
  for (const auto& c : r.closes) CHECK_FALSE(c.was_open);
}

TEST_CASE(
    "A WebSocket client finds a frozen server by its pong timeout and comes back after it thaws",
    "[ws][client][websockets]") {
  Watchdog dog(Ms(60000));
  Backend backend;
  auto o = options_for(backend.address);
  o.ping_interval = 100ms;
  o.pong_timeout = 300ms;
  o.handshake_timeout = 500ms;
  Harness h(o);
  auto& r = h.rec;
  REQUIRE(h.run_until([&] { return h.client().is_open(); }, Ms(10000)));
  h.run_until([] { return false; }, Ms(300));
  CHECK(r.pongs >= 1);  // the pings are answered while it runs
  backend.child.signal(SIGSTOP);
  const SteadyTime frozen = now();
  REQUIRE(h.run_until([&] { return !r.closes.empty(); }, Ms(5000)));
  const auto ms = ms_since(frozen);
  INFO("closed " << ms << " ms after the freeze");
  CHECK(r.closes[0].net_reason == net::CloseReason::pong_timeout);
  CHECK(ms <= 100 + 300 + 200);  // an interval and the timeout, and a loaded loop's latency
  // Meanwhile it reconnects (the kernel accepts for the frozen process),
  // and the handshake times out until the server runs again.
  h.run_until([] { return false; }, Ms(700));
  backend.child.signal(SIGCONT);
  REQUIRE(h.run_until([&] { return r.opens >= 2 && h.client().is_open(); }, Ms(10000)));
  CHECK_FALSE(h.client().send_text("back"));
  REQUIRE(
      h.run_until([&] { return !r.messages.empty() && r.messages.back() == "back"; }, Ms(5000)));
}

TEST_CASE("A WebSocket client talks to heartwheel-chat: echo, its pings answered, its protocol",
          "[ws][client][chat]") {
  Watchdog dog(Ms(60000));
  TempDir dir;
  Child chat({HEARTWHEEL_CHAT_BIN, "--listen", "127.0.0.1:0", "--ping-interval", "100ms",
              "--pong-timeout", "1s", "--stats-json", dir.file("stats.json")});
  const int port = chat.wait_listening(Ms(10000));
  REQUIRE(port > 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  {
    auto o = options_for(address, "/echo");
    o.ping_interval = 0s;  // the server pings
    Harness h(o);
    auto& r = h.rec;
    REQUIRE(h.run_until([&] { return h.client().is_open(); }, Ms(10000)));
    CHECK_FALSE(h.client().send_text("over the echo"));
    REQUIRE(h.run_until([&] { return r.messages.size() == 1; }, Ms(5000)));
    CHECK(r.messages[0] == "over the echo");
    // 500 ms of the server's 100 ms pings, answered by the session: it
    // stays open (its pong timeout is 1 s).
    h.run_until([] { return false; }, Ms(500));
    CHECK(r.pings >= 3);
    CHECK(r.closes.empty());
  }
  {
    Harness h(options_for(address, "/ws"));
    auto& r = h.rec;
    REQUIRE(h.run_until([&] { return h.client().is_open(); }, Ms(10000)));
    CHECK_FALSE(h.client().send_text(R"({"id":1,"op":"subscribe","channel":"room"})"));
    CHECK_FALSE(
        h.client().send_text(R"({"id":2,"op":"publish","channel":"room","data":{"text":"hi"}})"));
    REQUIRE(h.run_until(
        [&] {
          for (const auto& m : r.messages)
            if (m.find(R"("text":"hi")") != std::string::npos) return true;
          return false;
        },
        Ms(5000)));
  }
  chat.signal(SIGTERM);
  CHECK(chat.wait_exit(Ms(10000)));
}

TEST_CASE(
    "A WebSocket client takes heartwheel-chat's restart close 1012 cleanly and reconnects to the "
    "successor",
    "[ws][client][chat][restart]") {
  Watchdog dog(Ms(60000));
  TempDir dir;
  const std::string pid_file = dir.file("chat.pid");
  Child chat({HEARTWHEEL_CHAT_BIN, "--listen", "127.0.0.1:0", "--workers", "1", "--drain-timeout",
              "1s", "--pid-file", pid_file});
  SuccessorGuard successor(pid_file, chat.pid());
  const int port = chat.wait_listening(Ms(10000));
  REQUIRE(port > 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);

  // Two clients on one loop: one reconnects (the default), one does not.
  uv_loop_t loop{};
  REQUIRE(uv_loop_init(&loop) == 0);
  std::optional<heartwheel::LoopWheel> wheel(std::in_place, &loop);
  auto o = options_for(address, "/ws");
  // Every close now is "young": without reconnect_promptly a 1012 would
  // count as a failed attempt (failures() 1 during the wait); the wait is
  // long enough to look at it.
  o.connector.stable_after = 60s;
  o.connector.backoff_initial = 300ms;
  o.connector.backoff_max = 1s;
  o.connector.backoff_jitter = 0;
  Recorder back_rec, gone_rec;
  auto back = std::make_unique<ws::Client>(*wheel, back_rec, o);
  o.connector.reconnect = false;
  auto gone = std::make_unique<ws::Client>(*wheel, gone_rec, o);
  back->start();
  gone->start();
  const auto run_until = [&](auto done, Ms limit) {
    return hwtest::run_loop_until(loop, done, limit);
  };
  REQUIRE(run_until([&] { return back->is_open() && gone->is_open(); }, Ms(10000)));

  chat.signal(SIGUSR2);  // a successor takes the listener; this process drains with 1012
  REQUIRE(run_until([&] { return back_rec.closes.size() == 1; }, Ms(20000)));
  CHECK_FALSE(back->connector().connected());  // waiting backoff_initial, not a failure
  CHECK(back->connector().failures() == 0);
  REQUIRE(run_until([&] { return gone_rec.closes.size() == 1; }, Ms(20000)));
  for (Recorder* r : {&back_rec, &gone_rec}) {
    const ws::ClientCloseInfo& c = r->closes[0];
    CHECK(c.code == ws::kCloseServiceRestart);  // a clean close, not a protocol error (1002)
    CHECK(c.server_restart());
    CHECK(r->reasons[0] == "service restart");
    CHECK(c.sent_code == ws::kCloseServiceRestart);  // echoed
    CHECK(c.net_reason == net::CloseReason::protocol_close);
    CHECK(c.was_open);
  }
  // The reconnecting client is back, on the successor (the same port), with
  // no failed attempt counted; the other stays closed.
  REQUIRE(run_until([&] { return back_rec.opens == 2 && back->is_open(); }, Ms(10000)));
  CHECK(chat.wait_exit(Ms(20000)) == 0);  // the old process drained and left
  const std::string successor_pid = read_file(pid_file);
  CHECK(!successor_pid.empty());
  CHECK(successor_pid.find(std::to_string(chat.pid())) == std::string::npos);
  CHECK_FALSE(back->send_text(R"({"id":1,"op":"subscribe","channel":"room"})"));
  REQUIRE(run_until(
      [&] {
        for (const auto& m : back_rec.messages)
          if (m.find(R"("id":1,"ok":true)") != std::string::npos) return true;
        return false;
      },
      Ms(5000)));
  run_until([] { return false; }, Ms(300));
  CHECK(gone_rec.opens == 1);
  CHECK(gone->connection() == nullptr);

  back->stop();
  run_until([&] { return back->connection() == nullptr; }, Ms(3000));
  back.reset();
  gone.reset();
  wheel.reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}
