// heartwheel-rpc-server and heartwheel-rpc-client as processes on loopback:
// heartbeats keep an idle client connected, a silent socket is closed
// (pong_timeout) three intervals after its last byte, a client reconnects to
// a restarted server, delayed replies show call timeouts without double
// delivery, and a drain finishes in-flight calls. Heartbeats are 200 ms so
// the whole file takes well under a minute.
#include "process_support.h"

#include <heartwheel/rpc/frame.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "closed_port.h"
#include "eventually.h"

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#ifndef HEARTWHEEL_RPC_SERVER_BIN
#error "HEARTWHEEL_RPC_SERVER_BIN must name the built heartwheel-rpc-server"
#endif
#ifndef HEARTWHEEL_RPC_CLIENT_BIN
#error "HEARTWHEEL_RPC_CLIENT_BIN must name the built heartwheel-rpc-client"
#endif

using namespace hwproc;
using nlohmann::json;
namespace rpc = heartwheel::rpc;

namespace {

const std::string kServer = HEARTWHEEL_RPC_SERVER_BIN;
const std::string kClient = HEARTWHEEL_RPC_CLIENT_BIN;

std::vector<std::string> server_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {kServer, "--heartbeat", "200ms", "--tick", "5ms"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> client_args(int port, std::vector<std::string> extra) {
  std::vector<std::string> a = {kClient, "--server", "127.0.0.1:" + std::to_string(port),
                                "--heartbeat", "200ms"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// SIGTERM, wait for a clean exit, and return the --stats-json document.
json stop_server(Child& server, const std::string& stats_path) {
  server.signal(SIGTERM);
  const auto status = server.wait_exit(Ms(5000));
  REQUIRE(status);
  CHECK(*status == 0);
  return json::parse(read_file(stats_path));
}

json run_client(Child& client, const std::string& json_path, Ms limit) {
  const auto status = client.wait_exit(limit);
  REQUIRE(status);
  REQUIRE(*status == 0);
  return json::parse(read_file(json_path));
}

// The frames in `bytes`, payloads copied to `payloads`. Heartbeats (the
// server's PINGs, its PONGs to ours) are left out unless `keep_heartbeats`.
std::vector<rpc::FrameView> frames_in(const std::string& bytes, std::vector<std::string>& payloads,
                                      bool keep_heartbeats = false) {
  rpc::FrameDecoder d;
  std::vector<rpc::FrameView> out;
  std::string_view in = bytes;
  std::error_code ec;
  while (auto f = d.next(in, ec)) {
    const bool heartbeat = f->type == rpc::FrameType::ping || f->type == rpc::FrameType::pong;
    if (heartbeat && !keep_heartbeats) continue;
    payloads.emplace_back(f->payload);
    out.push_back(*f);
  }
  REQUIRE(!ec);
  return out;
}

// Sends a PING and reads until its PONG came back: the server has read every
// frame sent before it (it handles a connection's frames in order).
void ping_through(RawSocket& sock) {
  sock.send(rpc::encode_frame(rpc::FrameType::ping, 99, std::string(rpc::kPingPayloadSize, 'p')));
  const auto has_pong = [](const std::string& bytes) {
    std::vector<std::string> payloads;
    for (const auto& f : frames_in(bytes, payloads, true))
      if (f.type == rpc::FrameType::pong) return true;
    return false;
  };
  sock.read_for(Ms(5000), has_pong);
  REQUIRE(has_pong(sock.received()));
}

// Waits until the server behind metrics `port` has read at least `n` REQUEST
// frames (its counters are published every 500 ms).
void wait_requests(int port, double n) {
  const auto read = [port] {
    return scrape(port, "heartwheel_rpc_frames_received_total{type=\"request\"}").value_or(0);
  };
  INFO("requests the server read: " << read());
  REQUIRE(hwtest::eventually([&] { return read() >= n; }, Ms(10000), Ms(50)));
}

// Every call ended exactly once, however it ended.
void check_accounted(const json& s) {
  CHECK(s["calls_started"].get<long>() == s["calls_ok"].get<long>() + s["calls_error"].get<long>() +
                                              s["calls_timed_out"].get<long>() + s["calls_failed"].get<long>());
  CHECK(s["duplicate_replies"] == 0);
  CHECK(s["unknown_replies"] == 0);
  CHECK(s["payload_mismatches"] == 0);
}

}  // namespace

TEST_CASE("An RPC client that only heartbeats stays connected for several idle periods",
          "[rpc][integration][heartbeat]") {
  Watchdog dog(Ms(30000));
  TempDir tmp;
  Child server(server_args({"--stats-json", tmp.file("server.json")}));
  const int port = server.wait_listening();
  REQUIRE(port > 0);
  // 1.6 s = 8 heartbeat intervals, more than twice the 600 ms timeout.
  Child client(client_args(port, {"--rate", "0", "--duration", "1600ms", "--json", tmp.file("c.json")}));
  const json s = run_client(client, tmp.file("c.json"), Ms(10000));
  INFO(s.dump(2));
  CHECK(s["connects"] == 1);
  CHECK(s["reconnects"] == 0);
  CHECK(s["calls_started"] == 0);
  // Both sides ping when write-idle; whoever's turn comes first pings, the
  // other's PONG counts as its write. Together: one per ~200 ms of silence.
  const int client_pings = s["heartbeats_sent"].get<int>();
  CHECK(client_pings + s["pings_received"].get<int>() >= 5);
  CHECK(s["pongs_received"].get<int>() >= client_pings - 1);  // the last may be in flight
  CHECK(s["heartbeat_rtt_us"]["count"] == s["pongs_received"]);
  CHECK(s["closed_by_reason"]["pong_timeout"] == 0);
  const json st = stop_server(server, tmp.file("server.json"));
  INFO(st.dump(2));
  CHECK(st["closed_by_reason"]["pong_timeout"] == 0);
  CHECK(st["rpc"]["pings_received"] == client_pings);
  CHECK(st["rpc"]["pings_sent"].get<int>() >= s["pings_received"].get<int>());  // one may cross the close
}

TEST_CASE(
    "A silent socket is closed by the server 3 heartbeat intervals after its last byte, "
    "not earlier",
    "[rpc][integration][heartbeat]") {
  Watchdog dog(Ms(30000));
  TempDir tmp;
  Child server(server_args({"--stats-json", tmp.file("server.json")}));
  const int port = server.wait_listening();
  REQUIRE(port > 0);
  const auto t0 = now();
  RawSocket silent(port);
  REQUIRE(silent.read_for(Ms(5000)));  // says nothing, reads until the server closes
  const auto lived = std::chrono::duration_cast<Ms>(silent.eof_at() - t0).count();
  CHECK(lived >= 600 - 2);        // never before the 3 x 200 ms timeout (ms clock rounding)
  CHECK(lived <= 600 + 1500);     // and not much after (generous for a loaded machine)
  // Meanwhile the server pinged it (nothing read or written for an interval).
  std::vector<std::string> payloads;
  const auto frames = frames_in(silent.received(), payloads, true);
  CHECK(frames.size() >= 1);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    CHECK(frames[i].type == rpc::FrameType::ping);
    CHECK(payloads[i].size() == rpc::kPingPayloadSize);
  }
  const json st = stop_server(server, tmp.file("server.json"));
  CHECK(st["closed_by_reason"]["pong_timeout"] == 1);
  CHECK(st["rpc"]["pong_timeouts"] == 1);
}

TEST_CASE("A client whose server dies reconnects when it comes back on the same port",
          "[rpc][integration][reconnect]") {
  Watchdog dog(Ms(40000));
  TempDir tmp;
  auto first = std::make_unique<Child>(server_args({"--metrics-listen", "127.0.0.1:0"}));
  const int port = first->wait_listening();
  REQUIRE(port > 0);
  const int metrics = first->wait_metrics();
  REQUIRE(metrics > 0);
  Child client(client_args(port, {"--rate", "100", "--call-timeout", "300ms", "--duration", "3500ms",
                                  "--backoff-initial", "50ms", "--backoff-max", "200ms", "--json",
                                  tmp.file("c.json")}));
  wait_requests(metrics, 50);  // the client is connected and calling
  first->signal(SIGKILL);
  REQUIRE(first->wait_exit(Ms(5000)));
  first.reset();
  // Held in the outage (connects refused all the same): free, the port could
  // be taken by a parallel test's listener or by the client connecting to
  // itself through it, and the second server could not bind it.
  auto held = std::make_unique<heartwheel::test::ClosedPort>(port);
  sleep_for(Ms(600));  // the outage: the client's connects (every 50-200 ms) are refused
  Child second(server_args({"--listen", "127.0.0.1:" + std::to_string(port), "--stats-json",
                            tmp.file("server2.json")}));
  REQUIRE(second.wait_listening() == port);
  held.reset();
  const json s = run_client(client, tmp.file("c.json"), Ms(15000));
  INFO(s.dump(2));
  CHECK(s["reconnects"].get<int>() >= 1);
  CHECK(s["connect_failures"].get<int>() >= 1);
  CHECK(s["calls_ok"].get<int>() >= 100);  // >= 50 before the kill, ~2 s after the restart
  check_accounted(s);
  const json st = stop_server(second, tmp.file("server2.json"));
  INFO(st.dump(2));
  CHECK(st["rpc"]["requests"].get<int>() >= 50);  // calls made after the reconnect
}

TEST_CASE("A client detects a frozen server by its missing pongs and reconnects when it thaws",
          "[rpc][integration][reconnect][heartbeat]") {
  Watchdog dog(Ms(40000));
  TempDir tmp;
  Child server(server_args({"--metrics-listen", "127.0.0.1:0"}));
  const int port = server.wait_listening();
  REQUIRE(port > 0);
  const int metrics = server.wait_metrics();
  REQUIRE(metrics > 0);
  Child client(client_args(port, {"--rate", "50", "--call-timeout", "300ms", "--duration", "3s",
                                  "--backoff-initial", "50ms", "--backoff-max", "200ms", "--json",
                                  tmp.file("c.json")}));
  wait_requests(metrics, 20);  // the client is connected and calling
  server.signal(SIGSTOP);  // the process is there, the kernel still ACKs: only heartbeats can tell
  sleep_for(Ms(1300));     // the freeze: longer than the 600 ms pong timeout
  server.signal(SIGCONT);
  const json s = run_client(client, tmp.file("c.json"), Ms(15000));
  INFO(s.dump(2));
  // Calls keep the client writing, but nothing is read: it pings, and
  // 3 x 200 ms after the last byte the unanswered ping closes the connection.
  CHECK(s["closed_by_reason"]["pong_timeout"].get<int>() >= 1);
  CHECK(s["reconnects"].get<int>() >= 1);
  CHECK(s["calls_timed_out"].get<int>() >= 1);  // calls made into the frozen server
  CHECK(s["calls_ok"].get<int>() >= 40);        // before the freeze and after the thaw
  check_accounted(s);
}

TEST_CASE("Replies delayed beyond the call timeout are timeouts, never delivered twice",
          "[rpc][integration][calls]") {
  Watchdog dog(Ms(30000));
  TempDir tmp;
  Child server(server_args({"--reply-delay", "300ms"}));
  const int port = server.wait_listening();
  REQUIRE(port > 0);
  SECTION("call timeout 100 ms < reply delay 300 ms") {
    Child client(client_args(port, {"--rate", "50", "--call-timeout", "100ms", "--duration", "1s",
                                    "--json", tmp.file("c.json")}));
    const json s = run_client(client, tmp.file("c.json"), Ms(10000));
    INFO(s.dump(2));
    CHECK(s["calls_started"].get<int>() >= 30);
    CHECK(s["calls_ok"] == 0);
    CHECK(s["calls_timed_out"] == s["calls_started"]);
    CHECK(s["late_replies"].get<int>() >= 10);  // replies that came after their deadline
    check_accounted(s);
  }
  SECTION("call timeout 1 s > reply delay 300 ms") {
    Child client(client_args(port, {"--rate", "50", "--call-timeout", "1s", "--duration", "1s",
                                    "--json", tmp.file("c.json")}));
    const json s = run_client(client, tmp.file("c.json"), Ms(10000));
    INFO(s.dump(2));
    CHECK(s["calls_ok"] == s["calls_started"]);
    CHECK(s["calls_timed_out"] == 0);
    CHECK(s["late_replies"] == 0);
    CHECK(s["rtt_us"]["p50"].get<double>() >= 300000 - 1000);  // the delay, from the wheel
    check_accounted(s);
  }
}

TEST_CASE("A drain finishes in-flight delayed calls, refuses new ones, then closes",
          "[rpc][integration][drain]") {
  Watchdog dog(Ms(30000));
  TempDir tmp;
  SECTION("the delay fits in the drain timeout") {
    Child server(server_args({"--reply-delay", "500ms", "--drain-timeout", "3s", "--stats-json",
                              tmp.file("server.json")}));
    const int port = server.wait_listening();
    REQUIRE(port > 0);
    RawSocket sock(port);
    RawSocket idle(port);  // owes nothing: the drain closes it first
    sock.send(rpc::encode_frame(rpc::FrameType::request, 7, "in flight"));
    ping_through(sock);  // request 7 is in the server's hands
    ping_through(idle);
    const auto term_at = now();
    server.signal(SIGTERM);
    REQUIRE(idle.read_for(Ms(5000)));  // the drain has begun
    sock.send(rpc::encode_frame(rpc::FrameType::request, 8, "too late"));
    REQUIRE(sock.read_for(Ms(5000)));  // EOF after the answer
    std::vector<std::string> payloads;
    const auto frames = frames_in(sock.received(), payloads);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].type == rpc::FrameType::error);  // the request that came during the drain
    CHECK(frames[0].id == 8);
    CHECK(frames[1].type == rpc::FrameType::response);
    CHECK(frames[1].id == 7);
    CHECK(payloads[1] == "in flight");
    CHECK(ms_since(term_at) >= 300);  // the server waited for the delayed reply
    const auto status = server.wait_exit(Ms(5000));
    REQUIRE(status);
    CHECK(*status == 0);
    const json st = json::parse(read_file(tmp.file("server.json")));
    INFO(st.dump(2));
    CHECK(st["closed_by_reason"]["drain"] == 2);  // sock and idle
    CHECK(st["rpc"]["dropped_replies"] == 0);
    CHECK(st["rpc"]["errors_sent"] == 1);
  }
  SECTION("the drain timeout cuts a longer delay short") {
    Child server(server_args({"--reply-delay", "2s", "--drain-timeout", "200ms", "--stats-json",
                              tmp.file("server.json")}));
    const int port = server.wait_listening();
    REQUIRE(port > 0);
    RawSocket sock(port);
    sock.send(rpc::encode_frame(rpc::FrameType::request, 1, "x"));
    ping_through(sock);  // the request is in the server's hands
    const auto term_at = now();
    server.signal(SIGTERM);
    REQUIRE(sock.read_for(Ms(5000)));
    CHECK(ms_since(term_at) < 1500);  // closed at the drain timeout, not after the 2 s delay
    std::vector<std::string> payloads;
    CHECK(frames_in(sock.received(), payloads).empty());  // no response came
    REQUIRE(server.wait_exit(Ms(5000)));
    const json st = json::parse(read_file(tmp.file("server.json")));
    CHECK(st["rpc"]["dropped_replies"] == 1);
  }
}

TEST_CASE("A bad frame closes only the connection that sent it", "[rpc][integration][frame]") {
  Watchdog dog(Ms(30000));
  TempDir tmp;
  Child server(server_args({"--max-frame", "1024", "--stats-json", tmp.file("server.json")}));
  const int port = server.wait_listening();
  REQUIRE(port > 0);
  RawSocket good(port);
  RawSocket bad_type(port);
  RawSocket too_large(port);
  std::string wire = rpc::encode_frame(rpc::FrameType::request, 1, "x");
  wire[rpc::kLengthFieldSize] = 9;
  bad_type.send(wire);
  too_large.send(rpc::encode_frame(rpc::FrameType::request, 2, std::string(2000, 'y')));
  CHECK(bad_type.read_for(Ms(3000)));
  CHECK(too_large.read_for(Ms(3000)));
  good.send(rpc::encode_frame(rpc::FrameType::request, 3, "still here"));
  good.read_for(Ms(3000), [](const std::string& b) { return b.size() >= rpc::kHeaderSize + 10; });
  CHECK(!good.eof());
  std::vector<std::string> payloads;
  const auto frames = frames_in(good.received(), payloads);
  REQUIRE(!frames.empty());
  CHECK(frames[0].type == rpc::FrameType::response);
  CHECK(payloads[0] == "still here");
  const json st = stop_server(server, tmp.file("server.json"));
  CHECK(st["rpc"]["protocol_errors"] == 2);
  CHECK(st["rpc"]["frames_too_large"] == 1);
  CHECK(st["closed_by_reason"]["protocol_error"] == 2);
}
