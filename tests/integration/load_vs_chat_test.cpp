// heartwheel-load --mode ws against the real heartwheel-chat: a few hundred
// WebSocket subscribers of two channels on two harness processes, a
// publisher, some dead subscribers and some that drop and reconnect. Every
// publication must reach every live subscriber exactly once (counted by
// offsets), the dead ones must be closed within ping interval + pong
// timeout + a tick and no live one closed, and the reconnected ones must
// recover what they missed; and a restart (SIGUSR2, close 1012) that the
// harness takes as one: every subscriber back on the successor and recovered,
// no error counted. Registered only when the heartwheel-chat target exists
// (HEARTWHEEL_CHAT_BIN, HEARTWHEEL_LOAD_BIN).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "process_support.h"
#include "redis_server.h"

using namespace std::chrono_literals;

namespace {

std::uint64_t u(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

struct ChatRun {
  int status = -1;
  nlohmann::json report;
};

// Starts heartwheel-chat (ping 1s, pong timeout 1s, tick 10ms, presence
// events off, plus `server_extra`), runs the harness against it with `extra`
// flags, stops the server by PID.
ChatRun run_against_chat(std::vector<std::string> extra, std::vector<std::string> server_extra = {}) {
  std::vector<std::string> server_argv = {HEARTWHEEL_CHAT_BIN, "--listen", "127.0.0.1:0",
                                          "--ping-interval",   "1s",       "--pong-timeout",
                                          "1s",                "--tick",   "10ms",
                                          "--no-join-leave"};
  server_argv.insert(server_argv.end(), server_extra.begin(), server_extra.end());
  hwproc::Child server(server_argv);
  const int port = server.wait_listening(10s);
  REQUIRE(port > 0);
  const std::string out = "/tmp/heartwheel-load-chat-" + std::to_string(::getpid()) + ".json";
  std::vector<std::string> argv = {
      HEARTWHEEL_LOAD_BIN, "--mode", "ws", "--target", "127.0.0.1:" + std::to_string(port),
      "--quiet",           "--json", out};
  argv.insert(argv.end(), extra.begin(), extra.end());
  hwproc::Child load(argv);
  const auto status = load.wait_exit(60s);
  server.signal(SIGTERM);
  CHECK(server.wait_exit(15s).has_value());
  REQUIRE(status.has_value());
  std::ifstream in(out);
  REQUIRE(in.good());
  ChatRun run{*status, nlohmann::json::parse(in)};
  std::remove(out.c_str());
  return run;
}

}  // namespace

TEST_CASE(
    "Every publication reaches every live WebSocket subscriber of heartwheel-chat once and dead "
    "subscribers are closed after ping interval plus pong timeout",
    "[integration][load][chat]") {
  const ChatRun run = run_against_chat(
      {"--connections", "300", "--processes", "2", "--channels", "2", "--publish-rate", "20",
       "--publish-start", "1500ms", "--dead-fraction", "0.1", "--expect-idle-close", "2s",
       "--idle-close-slack", "1500ms", "--expect-delivery", "--duration", "7s"});
  const auto& r = run.report;
  const auto& w = r["ws"];
  INFO(r.dump(2).substr(0, 4000));
  CHECK(run.status == 0);
  CHECK(r["connections_established"] == 300);
  CHECK(w["upgraded"] == 300);
  CHECK(w["subscribed"] == 300);
  CHECK(w["publishers"] == 1);
  // 20/s from 1.5 s to 5 s: about 70 publications, every one acknowledged.
  CHECK(u(w["publish_acks"]) >= 50);
  CHECK(w["publish_acks"] == w["publications_sent"]);
  // 270 live subscribers, half on each channel, each publication on one channel.
  CHECK(w["live_subscribers_at_end"] == 270);
  CHECK(u(w["expected"]) >= 270 * 50 / 2);
  CHECK(w["delivered"] == w["expected"]);
  CHECK(w["missing"] == 0);
  CHECK(w["duplicates"] == 0);
  CHECK(u(w["delivery_us"]["count"]) == u(w["delivered"]));
  CHECK(u(w["delivery_us"]["max"]) > 0);
  // Live subscribers answered the server's pings; the dead went on time.
  CHECK(u(w["server_pings"]) >= 270 * 3);
  CHECK(r["dead"]["count"] == 30);
  CHECK(r["dead"]["closed"] == 30);
  CHECK(r["dead"]["closed_early"] == 0);
  CHECK(r["dead"]["closed_late"] == 0);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(r["expectations_met"] == true);
}

TEST_CASE(
    "Subscribers that drop and reconnect to heartwheel-chat recover every publication they "
    "missed by resubscribing with since",
    "[integration][load][chat]") {
  const ChatRun run =
      run_against_chat({"--connections", "200", "--channels", "1", "--publish-rate", "50",
                        "--publish-start", "1s", "--reconnect", "0.25", "--reconnect-at", "2500ms",
                        "--reconnect-delay", "500ms", "--expect-delivery", "--duration", "6s"});
  const auto& r = run.report;
  const auto& w = r["ws"];
  INFO(r.dump(2).substr(0, 4000));
  CHECK(run.status == 0);
  CHECK(r["connections_established"] == 200);
  CHECK(w["reconnects"] == 50);
  CHECK(w["recovered"] == 50);
  CHECK(w["not_recovered"] == 0);
  // Half a second away at 50/s: each missed about 25 publications.
  CHECK(u(w["recovered_publications"]) >= 50 * 10);
  CHECK(w["live_subscribers_at_end"] == 200);
  CHECK(u(w["delivered"]) + u(w["recovered_publications"]) == u(w["expected"]));
  CHECK(w["missing"] == 0);
  CHECK(w["duplicates"] == 0);
  CHECK(r["live_closed_by_server"] == 0);
}

TEST_CASE(
    "With --no-uring-fanout every publication reaches every live subscriber once, in order, and "
    "dead subscribers still go on time",
    "[integration][load][chat][uring]") {
  // One write() per subscriber instead of the default io_uring batches (the
  // other cases here run the default): two channels at 40/s, and the
  // harness checks every subscriber's offsets arrive each once, in order.
  const ChatRun run = run_against_chat(
      {"--connections", "300", "--processes", "2", "--channels", "2", "--publish-rate", "40",
       "--publish-start", "1500ms", "--dead-fraction", "0.1", "--expect-idle-close", "2s",
       "--idle-close-slack", "1500ms", "--expect-delivery", "--duration", "7s"},
      {"--no-uring-fanout"});
  const auto& r = run.report;
  const auto& w = r["ws"];
  INFO(r.dump(2).substr(0, 4000));
  CHECK(run.status == 0);
  CHECK(w["subscribed"] == 300);
  CHECK(u(w["publish_acks"]) >= 100);
  CHECK(w["live_subscribers_at_end"] == 270);
  CHECK(w["delivered"] == w["expected"]);
  CHECK(w["missing"] == 0);
  CHECK(w["duplicates"] == 0);
  CHECK(r["dead"]["closed"] == 30);
  CHECK(r["dead"]["closed_early"] == 0);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(r["expectations_met"] == true);
}

TEST_CASE(
    "Over Centrifugo's protocol every publication reaches every live subscriber once, dropped "
    "subscribers recover what they missed and dead ones are closed on time",
    "[integration][load][chat][centrifugo]") {
  // Live subscribers answer the server's empty-command pings with their own;
  // the dead answer nothing and are closed by the pong timeout.
  const ChatRun run = run_against_chat({"--ws-protocol",
                                        "centrifugo",
                                        "--connections",
                                        "300",
                                        "--processes",
                                        "2",
                                        "--channels",
                                        "2",
                                        "--publish-rate",
                                        "40",
                                        "--publish-start",
                                        "1500ms",
                                        "--dead-fraction",
                                        "0.1",
                                        "--expect-idle-close",
                                        "2s",
                                        "--idle-close-slack",
                                        "1500ms",
                                        "--reconnect",
                                        "0.2",
                                        "--reconnect-at",
                                        "3s",
                                        "--reconnect-delay",
                                        "500ms",
                                        "--expect-delivery",
                                        "--duration",
                                        "7s"});
  const auto& r = run.report;
  const auto& w = r["ws"];
  INFO(r.dump(2).substr(0, 4000));
  CHECK(run.status == 0);
  CHECK(r["options"]["ws_path"] == "/ws");  // the flag's value; the harness used Centrifugo's
  CHECK(r["options"]["ws_protocol"] == "centrifugo");
  CHECK(w["upgraded"] == 300);
  CHECK(u(w["publish_acks"]) >= 100);
  CHECK(w["publish_acks"] == w["publications_sent"]);
  CHECK(w["live_subscribers_at_end"] == 270);
  CHECK(u(w["reconnects"]) > 0);
  CHECK(w["recovered"] == w["reconnects"]);
  CHECK(u(w["delivered"]) + u(w["recovered_publications"]) == u(w["expected"]));
  CHECK(w["missing"] == 0);
  CHECK(w["duplicates"] == 0);
  CHECK(u(w["server_pings"]) >= 270 * 3);
  CHECK(r["dead"]["closed"] == 30);
  CHECK(r["dead"]["closed_early"] == 0);
  CHECK(r["dead"]["closed_late"] == 0);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(r["expectations_met"] == true);
}

TEST_CASE(
    "heartwheel-load takes heartwheel-chat's restart (close 1012) as a restart: every subscriber "
    "back on the successor, recovered, nothing counted as an error",
    "[integration][load][chat][restart]") {
  hwproc::Watchdog dog(hwproc::Ms(60000));
  hwtest::RedisServer redis;  // the history both processes share: recovery across the restart
  hwproc::TempDir dir;
  const std::string pid_file = dir.file("chat.pid");
  hwproc::Child chat({HEARTWHEEL_CHAT_BIN, "--listen", "127.0.0.1:0", "--workers", "1", "--redis",
                      "127.0.0.1:" + std::to_string(redis.port()), "--pubsub-prefix",
                      "restart:", "--drain-timeout", "2s", "--pid-file", pid_file,
                      "--metrics-listen", "127.0.0.1:0", "--no-join-leave"});
  hwproc::SuccessorGuard successor(pid_file, chat.pid());
  const int port = chat.wait_listening(10s);
  REQUIRE(port > 0);
  const int metrics = chat.wait_metrics(10s);
  REQUIRE(metrics > 0);
  const std::string out = dir.file("load.json");
  const std::vector<std::string> load_argv = {HEARTWHEEL_LOAD_BIN,
                                              "--mode",
                                              "ws",
                                              "--target",
                                              "127.0.0.1:" + std::to_string(port),
                                              "--connections",
                                              "200",
                                              "--processes",
                                              "2",
                                              "--channels",
                                              "2",
                                              "--publish-rate",
                                              "40",
                                              "--publish-start",
                                              "500ms",
                                              "--publish-targets",
                                              "first",
                                              "--expect-delivery",
                                              "--duration",
                                              "10s",
                                              "--quiet",
                                              "--json",
                                              out};
  hwproc::Child load(load_argv);
  // Every subscriber in, and publishing under way (each channel has a
  // stream, so each resubscribe has an epoch to recover from).
  const auto gauge = [&](const char* sample) {
    return hwproc::scrape(metrics, sample).value_or(-1);
  };
  const auto until = hwproc::now() + 20s;
  while (hwproc::now() < until && (gauge("heartwheel_pubsub_subscriptions") < 200 ||
                                   gauge("heartwheel_pubsub_publications_total") < 10))
    hwproc::sleep_for(hwproc::Ms(50));
  REQUIRE(gauge("heartwheel_pubsub_subscriptions") == 200);
  chat.signal(SIGUSR2);
  CHECK(chat.wait_exit(20s) == 0);  // drained (1012 to each) and left to the successor
  const auto status = load.wait_exit(30s);
  REQUIRE(status.has_value());
  const nlohmann::json r = nlohmann::json::parse(hwproc::read_file(out));
  const auto& w = r["ws"];
  const auto& restart = w["server_restart"];
  INFO(r.dump(2).substr(0, 6000));
  CHECK(*status == 0);
  CHECK(r["connections_established"] == 200);  // the reconnects are not new connections
  CHECK(restart["closes"] == 200);
  CHECK(restart["resubscribed"] == 200);
  CHECK(restart["recovered"] == 200);
  CHECK(restart["publisher_closes"] == 1);
  CHECK(u(restart["back_ms"]["count"]) == 200);
  for (const char* series : {"closes_per_s", "back_per_s"}) {
    std::uint64_t per_second = 0;
    for (const auto& n : restart[series]) per_second += u(n);
    CHECK(per_second == 200);
  }
  CHECK(w["reconnects"] == 200);
  CHECK(w["not_recovered"] == 0);
  CHECK(w["missing"] == 0);
  CHECK(w["duplicates"] == 0);
  CHECK(w["live_subscribers_at_end"] == 200);
  CHECK(r["live_closed_by_server"] == 0);
  CHECK(r["errors"].empty());          // no ws_close_received:1012, no protocol error
  CHECK(r["connect_errors"].empty());  // nothing refused
  CHECK(r["expectations_met"] == true);
}
