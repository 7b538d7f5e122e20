// A Centrifugo connection's life on the timing wheel, in virtual time
// (docs/centrifugo.md): the server's ping (an empty command) every
// --ping-interval as the connect reply's `ping` says, the client's pong (an
// empty command) keeping it, no pong within --pong-timeout closing it; no
// connect within --connect-timeout (3502 stale); a token's expiry without a
// refresh (3005), a refresh moving it; and a subscribe with `recover` getting
// what it missed (`was_recovering`, `recovered`, `publications`).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "chat_centrifuge_harness.h"

using namespace std::chrono_literals;
using centrifuge_test::Chat;
using centrifuge_test::Conn;
using centrifuge_test::Json;
namespace net = heartwheel::net;

namespace {

centrifuge_test::Settings pings(const char* interval, const char* timeout) {
  centrifuge_test::Settings s;
  s.flags.ping_interval = interval;
  s.flags.pong_timeout = timeout;
  return s;
}

const char kSecret[] = "session-test-secret-of-more-than-32-bytes";

}  // namespace

TEST_CASE("The server pings with {} every ping interval and a client answering {} stays",
          "[chat][centrifugo][ping]") {
  Chat chat(pings("10s", "3s"));
  Json reply;
  Conn& c = chat.connect("alice", Json::object(), &reply);
  CHECK(reply["connect"]["ping"] == 10);
  CHECK(reply["connect"]["pong"] == true);
  // Every 10 s from the connection's start, whatever the client sends;
  // a pong 2 s after each ping is within the 3 s timeout.
  chat.host().run_for(10s);
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    CHECK(c.messages() == std::vector<Json>{Json::object()});
    CHECK(c.ws_pings() == 0);  // Centrifugo's ping, not WebSocket's
    chat.host().run_for(2s);
    c.send("{}");  // the pong: an empty command, never answered
    chat.host().run_for(7999ms);
    CHECK(c.messages().empty());
    chat.host().run_for(1ms);
  }
  chat.host().run_for(2s);
  c.send("{}");
  chat.host().run_for(5s);
  CHECK(c.open());
  CHECK_FALSE(c.close_code());
}

TEST_CASE("No pong within the pong timeout after a ping closes the connection on the wheel",
          "[chat][centrifugo][ping]") {
  Chat chat(pings("10s", "3s"));
  Conn& c = chat.connect("alice");
  chat.host().run_for(10s);
  REQUIRE(c.messages() == std::vector<Json>{Json::object()});
  chat.host().run_for(2999ms);
  CHECK(c.open());
  chat.host().run_for(2ms);  // 3 s after the ping, plus the host's tick
  CHECK_FALSE(c.open());
  CHECK(c.peer().close_reason() == net::CloseReason::pong_timeout);
}

TEST_CASE("Before its connect a Centrifugo client gets WebSocket pings, not {}",
          "[chat][centrifugo][ping]") {
  centrifuge_test::Settings s = pings("10s", "3s");
  s.tweak = [](chat::Config& config) { config.connect_timeout = 60s; };
  Chat chat(s);
  Conn& c = chat.open("?name=alice");
  chat.host().run_for(10s);
  CHECK(c.ws_pings() == 1);
  CHECK(c.messages().empty());
}

TEST_CASE("No connect within the connect timeout closes with 3502 stale", "[chat][centrifugo]") {
  Chat chat;  // --connect-timeout 10s
  Conn& c = chat.open("?name=alice");
  chat.host().run_for(9999ms);
  CHECK_FALSE(c.close_code());
  chat.host().run_for(2ms);
  CHECK(c.close_code() == 3502);
  CHECK(c.close_reason() == "stale");
}

TEST_CASE("A token that expires without a refresh closes with 3005, and a refresh moves the expiry",
          "[chat][centrifugo]") {
  centrifuge_test::Settings s = pings("0s", "8s");  // no pings: only the expiry acts
  s.hmac_secret = kSecret;
  Chat chat(s);
  const std::int64_t now = centrifuge_test::unix_now();
  const auto token = [&](std::int64_t exp) {
    return centrifuge_test::hs256_token({{"sub", "alice"}, {"exp", exp}}, kSecret);
  };

  Conn& lapsed = chat.open("");
  const Json r = lapsed.call({{"id", 1}, {"connect", {{"token", token(now + 60)}}}});
  CHECK(r["connect"]["expires"] == true);
  CHECK(r["connect"]["ttl"].get<int>() >= 58);  // exp, less the wall time the test took
  CHECK(r["connect"]["ttl"].get<int>() <= 60);
  CHECK_FALSE(r["connect"].contains("ping"));  // --ping-interval 0: no pings promised

  Conn& refreshed = chat.open("");
  const Json rr = refreshed.call({{"id", 1}, {"connect", {{"token", token(now + 60)}}}});
  REQUIRE(rr.contains("connect"));
  chat.host().run_for(30s);
  const Json again = refreshed.call({{"id", 2}, {"refresh", {{"token", token(now + 3600)}}}});
  INFO(again.dump());
  CHECK(again["refresh"]["client"] == rr["connect"]["client"]);
  CHECK(again["refresh"]["version"] == rr["connect"]["version"]);
  CHECK(again["refresh"]["expires"] == true);
  CHECK(again["refresh"]["ttl"].get<int>() >= 3500);

  // exp + the verifier's 5 s leeway after `now` (whole seconds, so 64 to 65 s
  // after the connect), by the wheel.
  chat.host().run_for(33s);
  CHECK_FALSE(lapsed.close_code());
  chat.host().run_for(3s);
  CHECK(lapsed.close_code() == 3005);
  CHECK(lapsed.close_reason() == "connection expired");
  CHECK_FALSE(refreshed.close_code());
  CHECK(refreshed.open());
}

TEST_CASE("A subscribe with recover gets what it missed, or says it could not",
          "[chat][centrifugo][recovery]") {
  Chat chat;
  Conn& alice = chat.connect("alice");
  const Json first = alice.call({{"id", 2}, {"subscribe", {{"channel", "room"}}}});
  const std::string epoch = first["subscribe"]["epoch"];
  const auto publish = [&](int n) {
    REQUIRE_FALSE(chat.bus().publish("room", std::to_string(n)).error);
  };
  for (int n = 1; n <= 3; ++n) publish(n);
  CHECK(alice.messages().size() == 4);  // her join, offsets 1..3
  REQUIRE(alice.call({{"id", 3}, {"unsubscribe", {{"channel", "room"}}}}).contains("unsubscribe"));
  for (int n = 4; n <= 5; ++n) publish(n);  // missed

  const Json back = alice.call(
      {{"id", 4},
       {"subscribe", {{"channel", "room"}, {"recover", true}, {"offset", 3}, {"epoch", epoch}}}});
  CHECK(back ==
        Json{{"id", 4},
             {"subscribe",
              {{"recoverable", true},
               {"positioned", true},
               {"epoch", epoch},
               {"offset", 5},
               {"publications", {{{"data", 4}, {"offset", 4}}, {{"data", 5}, {"offset", 5}}}},
               {"was_recovering", true},
               {"recovered", true}}}});
  // The recovered ones come in the reply only; live, her join again.
  const std::vector<Json> live = alice.messages();
  REQUIRE(live.size() == 1);
  CHECK(live[0]["push"].contains("join"));

  // From a position of another epoch (the server restarted): nothing to give.
  REQUIRE(alice.call({{"id", 5}, {"unsubscribe", {{"channel", "room"}}}}).contains("unsubscribe"));
  const Json lost = alice.call(
      {{"id", 6},
       {"subscribe", {{"channel", "room"}, {"recover", true}, {"offset", 5}, {"epoch", "old"}}}});
  CHECK(lost == Json{{"id", 6},
                     {"subscribe",
                      {{"recoverable", true},
                       {"positioned", true},
                       {"epoch", epoch},
                       {"offset", 5},
                       {"was_recovering", true}}}});
}
