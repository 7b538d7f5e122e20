// Every error and close code docs/centrifugo.md says heartwheel-chat sends a
// Centrifugo client ("Client protocol: error and disconnect codes"), each
// provoked frame by frame: the reply names the command's id and the code
// (100 internal and 111 too many requests marked temporary), and a command
// that cannot be read, or comes before the connect, closes the connection
// with 3501; a refused token with 3500. (101 is the server API's only, and
// 110 is not used.)
#include <catch2/catch.hpp>
#include <string>

#include "chat_centrifuge_harness.h"

using centrifuge_test::Chat;
using centrifuge_test::Conn;
using centrifuge_test::Json;

namespace {

Json error(std::uint64_t id, int code, const std::string& message, bool temporary = false) {
  Json e = {{"code", code}, {"message", message}};
  if (temporary) e["temporary"] = true;
  return {{"id", id}, {"error", e}};
}

Json subscribe(std::uint64_t id, const std::string& channel) {
  return {{"id", id}, {"subscribe", {{"channel", channel}}}};
}

const char kSecret[] = "errors-test-secret-of-more-than-32-bytes";

}  // namespace

TEST_CASE("A name that is no channel is 107 bad request, a reserved channel 103",
          "[chat][centrifugo][errors]") {
  Chat chat;
  Conn& c = chat.connect("alice");
  CHECK(c.call(subscribe(2, "")) == error(2, 107, "bad request"));
  CHECK(c.call(subscribe(3, "two words")) == error(3, 107, "bad request"));
  CHECK(c.call(subscribe(4, std::string(256, 'x'))) == error(4, 107, "bad request"));
  CHECK(c.call(subscribe(5, "__hw:control")) == error(5, 103, "permission denied"));
  CHECK(c.open());
}

TEST_CASE("A second subscribe to a channel is 105 already subscribed",
          "[chat][centrifugo][errors]") {
  Chat chat;
  Conn& c = chat.connect("alice");
  REQUIRE(c.call(subscribe(2, "room")).contains("subscribe"));
  CHECK(c.call(subscribe(3, "room")) == error(3, 105, "already subscribed"));
}

TEST_CASE("Past the channels per connection or the data size the answer is 106 limit exceeded",
          "[chat][centrifugo][errors]") {
  centrifuge_test::Settings s;
  s.tweak_bus = [](heartwheel::pubsub::BusOptions& bus) {
    bus.limits.channel_limit = 1;
    bus.limits.max_data_bytes = 16;
  };
  Chat chat(s);
  Conn& c = chat.connect("alice");
  REQUIRE(c.call(subscribe(2, "one")).contains("subscribe"));
  CHECK(c.call(subscribe(3, "two")) == error(3, 106, "limit exceeded"));
  CHECK(c.call({{"id", 4}, {"publish", {{"channel", "one"}, {"data", std::string(32, 'd')}}}}) ==
        error(4, 106, "limit exceeded"));
}

TEST_CASE("The channel rules answer 102 unknown channel, 103 permission denied, 108 not available",
          "[chat][centrifugo][errors]") {
  centrifuge_test::Settings s;
  s.channels_config = R"({"namespaces": [
    {"name": "", "subscribe": "any", "publish": "subscriber"},
    {"name": "quiet", "subscribe": "any", "history": false, "presence": false},
    {"name": "private", "subscribe": "token"}]})";
  Chat chat(s);
  Conn& c = chat.connect("alice");
  CHECK(c.call(subscribe(2, "nowhere:x")) == error(2, 102, "unknown channel"));
  CHECK(c.call(subscribe(3, "private:x")) == error(3, 103, "permission denied"));
  // publish: subscriber, and alice is not one.
  CHECK(c.call({{"id", 4}, {"publish", {{"channel", "room"}, {"data", 1}}}}) ==
        error(4, 103, "permission denied"));
  // As Centrifugo: history or presence off in the namespace is 108.
  CHECK(c.call({{"id", 5}, {"history", {{"channel", "quiet:x"}}}}) ==
        error(5, 108, "not available"));
  CHECK(c.call({{"id", 6}, {"presence", {{"channel", "quiet:x"}}}}) ==
        error(6, 108, "not available"));
  CHECK(c.call({{"id", 7}, {"presence_stats", {{"channel", "quiet:x"}}}}) ==
        error(7, 108, "not available"));
  REQUIRE(c.call(subscribe(8, "quiet:x")).contains("subscribe"));
}

TEST_CASE("History on a server that keeps none (--history-size 0) is 108 not available",
          "[chat][centrifugo][errors]") {
  centrifuge_test::Settings settings;
  settings.flags.history_size = 0;
  Chat chat(settings);
  Conn& c = chat.connect("alice");
  REQUIRE(c.call(subscribe(2, "room")).contains("subscribe"));
  CHECK(c.call({{"id", 3}, {"history", {{"channel", "room"}}}}) ==
        error(3, 108, "not available"));
  CHECK(c.call({{"id", 4}, {"history", {{"channel", "room"}, {"limit", 5}}}}) ==
        error(4, 108, "not available"));
}

TEST_CASE("Without a token key refresh and sub_refresh are 108 not available, rpc 104",
          "[chat][centrifugo][errors]") {
  Chat chat;
  Conn& c = chat.connect("alice");
  REQUIRE(c.call(subscribe(2, "room")).contains("subscribe"));
  CHECK(c.call({{"id", 3}, {"refresh", {{"token", "x"}}}}) == error(3, 108, "not available"));
  CHECK(c.call({{"id", 4}, {"sub_refresh", {{"channel", "room"}, {"token", "x"}}}}) ==
        error(4, 108, "not available"));
  CHECK(c.call({{"id", 5}, {"rpc", {{"method", "m"}}}}) == error(5, 104, "method not found"));
}

TEST_CASE(
    "An expired token is 109 token expired and may be tried again, a forged one closes "
    "with 3500",
    "[chat][centrifugo][errors]") {
  centrifuge_test::Settings s;
  s.hmac_secret = kSecret;
  Chat chat(s);
  Conn& c = chat.open("");
  const std::int64_t now = centrifuge_test::unix_now();
  const std::string expired =
      centrifuge_test::hs256_token({{"sub", "alice"}, {"exp", now - 3600}}, kSecret);
  CHECK(c.call({{"id", 1}, {"connect", {{"token", expired}}}}) == error(1, 109, "token expired"));
  const std::string fresh =
      centrifuge_test::hs256_token({{"sub", "alice"}, {"exp", now + 3600}}, kSecret);
  REQUIRE(c.call({{"id", 2}, {"connect", {{"token", fresh}}}}).contains("connect"));
  // A channel token past its exp is 109 too.
  const std::string channel_token = centrifuge_test::hs256_token(
      {{"sub", "alice"}, {"channel", "room"}, {"exp", now - 3600}}, kSecret);
  CHECK(c.call({{"id", 3}, {"subscribe", {{"channel", "room"}, {"token", channel_token}}}}) ==
        error(3, 109, "token expired"));

  Conn& forged = chat.open("");
  const std::string wrong_key =
      centrifuge_test::hs256_token({{"sub", "mallory"}, {"exp", now + 3600}}, "not-the-secret");
  forged.send(Json{{"id", 1}, {"connect", {{"token", wrong_key}}}}.dump());
  CHECK(forged.messages().empty());
  CHECK(forged.close_code() == 3500);
  CHECK(forged.close_reason() == "invalid token");
}

TEST_CASE("Over the rate limit a command is 111 too many requests, temporary",
          "[chat][centrifugo][errors]") {
  centrifuge_test::Settings s;
  s.tweak = [](chat::Config& config) { config.rate_limits.set("publish=1/s"); };
  Chat chat(s);
  Conn& c = chat.connect("alice");
  // Both in one frame: the second finds the bucket empty.
  const std::vector<Json> got = c.exchange(R"({"id":2,"publish":{"channel":"room","data":1}})"
                                           "\n"
                                           R"({"id":3,"publish":{"channel":"room","data":2}})");
  REQUIRE(got.size() == 2);
  CHECK(got[0] == Json{{"id", 2}, {"publish", Json::object()}});
  CHECK(got[1] == error(3, 111, "too many requests", true));
}

TEST_CASE("Past the requests in flight a command is 111 with its own id, the others answered later",
          "[chat][centrifugo][errors]") {
  centrifuge_test::Settings s;
  s.tweak = [](chat::Config& config) { config.max_requests_in_flight = 2; };
  Chat chat(s);
  Conn& c = chat.connect("alice");
  chat.broker().hold_publishes = true;  // a broker that answers later (Redis)
  std::string frame;
  for (int id = 2; id <= 4; ++id)
    frame += Json{{"id", id}, {"publish", {{"channel", "room"}, {"data", id}}}}.dump() + "\n";
  // The third finds two waiting: refused, its reply in command order after
  // theirs. It names its command, so the SDK rejects that call (a reply
  // without an id would be read as a ping and the call left to its timeout).
  CHECK(c.exchange(frame).empty());
  chat.broker().release_publishes();
  CHECK(c.messages() == std::vector<Json>{{{"id", 2}, {"publish", Json::object()}},
                                          {{"id", 3}, {"publish", Json::object()}},
                                          error(4, 111, "too many requests", true)});
}

TEST_CASE("History since a position of another epoch is 112 unrecoverable position",
          "[chat][centrifugo][errors]") {
  Chat chat;
  Conn& c = chat.connect("alice");
  REQUIRE(c.call(subscribe(2, "room")).contains("subscribe"));
  REQUIRE(c.call({{"id", 3}, {"publish", {{"channel", "room"}, {"data", 1}}}}).contains("publish"));
  CHECK(c.call({{"id", 4},
                {"history",
                 {{"channel", "room"},
                  {"limit", 10},
                  {"since", {{"offset", 0}, {"epoch", "gone"}}}}}}) ==
        error(4, 112, "unrecoverable position"));
}

TEST_CASE("A broker that fails is 100 internal server error, temporary",
          "[chat][centrifugo][errors]") {
  Chat chat;
  Conn& c = chat.connect("alice");
  chat.broker().fail_publishes = true;
  CHECK(c.call({{"id", 2}, {"publish", {{"channel", "room"}, {"data", 1}}}}) ==
        error(2, 100, "internal server error", true));
  chat.broker().fail_publishes = false;
  CHECK(c.call({{"id", 3}, {"publish", {{"channel", "room"}, {"data", 1}}}}).contains("publish"));
}

TEST_CASE("A command that cannot be read closes the connection with 3501 bad request",
          "[chat][centrifugo][errors]") {
  const char* const frames[] = {
      "{",                                                // not JSON
      "[1,2]",                                            // not an object
      R"({"id":2,"foo":{}})",                             // a method this server does not know
      R"({"id":2,"subscribe":{},"publish":{}})",          // two methods
      R"({"id":-2,"subscribe":{"channel":"room"}})",      // an id that is no uint32
      R"({"id":2,"subscribe":{"channel":5}})",            // a field of the wrong type
      R"({"id":2,"subscribe":"room"})",                   // a body that is no object
      R"({"id":2,"history":{"channel":"r","since":1}})",  // since that is no position
  };
  for (const char* frame : frames) {
    INFO(frame);
    Chat chat;
    Conn& c = chat.connect("alice");
    c.send(frame);
    CHECK(c.messages().empty());
    CHECK(c.close_code() == 3501);
    CHECK(c.close_reason() == "bad request");
    // Nothing after the close is obeyed.
    c.send(R"({"id":9,"presence_stats":{"channel":"room"}})");
    CHECK(c.messages().empty());
  }
}

TEST_CASE("Anything before the connect closes the connection with 3501",
          "[chat][centrifugo][errors]") {
  Chat chat;
  Conn& c = chat.open("?name=alice");
  c.send(R"({"id":1,"subscribe":{"channel":"room"}})");
  CHECK(c.messages().empty());
  CHECK(c.close_code() == 3501);
}

TEST_CASE("A second connect on a connected client is 3501 bad request",
          "[chat][centrifugo][errors]") {
  Chat chat;
  Conn& c = chat.connect("alice");
  c.send(R"({"id":2,"connect":{}})");
  CHECK(c.messages().empty());
  CHECK(c.close_code() == 3501);
}
