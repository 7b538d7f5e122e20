// Centrifugo's client protocol v2 (JSON) on heartwheel-chat's engine, frame
// by frame (docs/centrifugo.md, "Client protocol: commands"): each command's
// reply echoes its id and carries the result's fields; several commands in
// one frame (one per line) are answered in order; the pushes (pub, join,
// leave, a server-side subscribe) reach the clients they should. The server
// runs on a testing::Host (chat_centrifuge_harness.h).
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "chat_centrifuge_harness.h"

using centrifuge_test::Chat;
using centrifuge_test::Conn;
using centrifuge_test::Json;

namespace {

// The keys of an object, to check a reply carries exactly its fields.
std::set<std::string> keys(const Json& o) {
  std::set<std::string> out;
  for (const auto& [k, v] : o.items()) out.insert(k);
  return out;
}

// The ids of the replies among `messages`, in order.
std::vector<std::uint64_t> reply_ids(const std::vector<Json>& messages) {
  std::vector<std::uint64_t> out;
  for (const Json& m : messages)
    if (m.contains("id")) out.push_back(m["id"].get<std::uint64_t>());
  return out;
}

Json join_push(const std::string& channel, const std::string& client, const std::string& user) {
  return {
      {"push", {{"channel", channel}, {"join", {{"info", {{"client", client}, {"user", user}}}}}}}};
}

Json pub_push(const std::string& channel, const Json& data, const std::string& client,
              const std::string& user, std::uint64_t offset) {
  return {
      {"push",
       {{"channel", channel},
        {"pub",
         {{"data", data}, {"info", {{"client", client}, {"user", user}}}, {"offset", offset}}}}}};
}

}  // namespace

TEST_CASE("Each command of a connected Centrifugo client is answered with its id and its fields",
          "[chat][centrifugo]") {
  Chat chat;
  Json connected;
  Conn& alice = chat.connect("alice", {{"name", "js"}, {"version", "5.8.0"}}, &connected);
  CHECK(keys(connected) == std::set<std::string>{"id", "connect"});
  CHECK(connected["id"] == 1);
  const Json& c = connected["connect"];
  CHECK(keys(c) == std::set<std::string>{"client", "version", "ping", "pong"});
  const std::string client = c["client"];
  CHECK_FALSE(client.empty());
  CHECK(c["version"].get<std::string>().rfind("heartwheel ", 0) == 0);
  CHECK(c["ping"] == 25);  // --ping-interval's default, in whole seconds
  CHECK(c["pong"] == true);

  Json r = alice.call({{"id", 2}, {"subscribe", {{"channel", "room"}}}});
  CHECK(keys(r) == std::set<std::string>{"id", "subscribe"});
  CHECK(keys(r["subscribe"]) ==
        std::set<std::string>{"recoverable", "positioned", "epoch", "offset"});
  CHECK(r["subscribe"]["recoverable"] == true);
  CHECK(r["subscribe"]["positioned"] == true);
  CHECK(r["subscribe"]["offset"] == 0);
  const std::string epoch = r["subscribe"]["epoch"];
  CHECK_FALSE(epoch.empty());
  // Every subscriber hears of a join, the joining one too (as Centrifugo).
  CHECK(alice.messages() == std::vector<Json>{join_push("room", client, "alice")});

  const Json data = {{"text", "hi"}};
  CHECK(alice.call({{"id", 3}, {"publish", {{"channel", "room"}, {"data", data}}}}) ==
        Json{{"id", 3}, {"publish", Json::object()}});
  CHECK(alice.messages() == std::vector<Json>{pub_push("room", data, client, "alice", 1)});

  const Json me = {{"client", client}, {"user", "alice"}};
  CHECK(alice.call({{"id", 4}, {"presence", {{"channel", "room"}}}}) ==
        Json{{"id", 4}, {"presence", {{"presence", {{client, me}}}}}});
  CHECK(alice.call({{"id", 5}, {"presence_stats", {{"channel", "room"}}}}) ==
        Json{{"id", 5}, {"presence_stats", {{"num_clients", 1}, {"num_users", 1}}}});
  CHECK(alice.call({{"id", 6}, {"history", {{"channel", "room"}, {"limit", 10}}}}) ==
        Json{{"id", 6},
             {"history",
              {{"publications", {{{"data", data}, {"info", me}, {"offset", 1}}}},
               {"epoch", epoch},
               {"offset", 1}}}});
  // limit 0 asks for the stream's position only.
  CHECK(alice.call({{"id", 7}, {"history", {{"channel", "room"}}}}) ==
        Json{{"id", 7}, {"history", {{"epoch", epoch}, {"offset", 1}}}});
  CHECK(alice.call({{"id", 8}, {"ping", Json::object()}}) ==
        Json{{"id", 8}, {"ping", Json::object()}});
  // Without --proxy-rpc-endpoint there is nobody to answer an RPC.
  CHECK(alice.call({{"id", 9}, {"rpc", {{"method", "sum"}, {"data", {1, 2}}}}}) ==
        Json{{"id", 9}, {"error", {{"code", 104}, {"message", "method not found"}}}});
  // A send (no id) gets no reply and the connection stays.
  alice.send(Json{{"send", {{"data", {{"x", 1}}}}}}.dump());
  CHECK(alice.messages().empty());
  CHECK(alice.call({{"id", 10}, {"unsubscribe", {{"channel", "room"}}}}) ==
        Json{{"id", 10}, {"unsubscribe", Json::object()}});
  // Nothing to undo is not an error (as Centrifugo).
  CHECK(alice.call({{"id", 11}, {"unsubscribe", {{"channel", "room"}}}}) ==
        Json{{"id", 11}, {"unsubscribe", Json::object()}});
  CHECK(alice.call({{"id", 12}, {"presence_stats", {{"channel", "room"}}}}) ==
        Json{{"id", 12}, {"presence_stats", {{"num_clients", 0}, {"num_users", 0}}}});
  CHECK(alice.open());
  CHECK_FALSE(alice.close_code());
}

TEST_CASE("Several commands in one frame, one per line, are answered in command order",
          "[chat][centrifugo]") {
  Chat chat;
  Conn& a = chat.open("?name=alice");
  // The SDK sends its connect and its subscribes in one frame.
  const std::vector<Json> first = a.exchange(R"({"id":1,"connect":{}})"
                                             "\n"
                                             R"({"id":2,"subscribe":{"channel":"room"}})");
  REQUIRE(reply_ids(first) == std::vector<std::uint64_t>{1, 2});
  CHECK(first[0].contains("connect"));
  CHECK(first[1].contains("subscribe"));

  // Each runs after the one before it: the history sees the publish above
  // it and not the one below; blank lines are nothing.
  const std::vector<Json> batch = a.exchange(R"({"id":3,"publish":{"channel":"room","data":"one"}})"
                                             "\n"
                                             R"({"id":4,"history":{"channel":"room","limit":-1}})"
                                             "\n\r\n"
                                             R"({"id":5,"presence_stats":{"channel":"room"}})"
                                             "\n"
                                             R"({"id":6,"publish":{"channel":"room","data":"two"}})"
                                             "\n");
  CHECK(reply_ids(batch) == std::vector<std::uint64_t>{3, 4, 5, 6});
  for (const Json& m : batch) {
    if (m.value("id", 0) != 4) continue;
    REQUIRE(m["history"]["publications"].size() == 1);
    CHECK(m["history"]["publications"][0]["data"] == "one");
    CHECK(m["history"]["offset"] == 1);
  }
  // An error in the middle of a batch answers that command alone.
  const std::vector<Json> mixed =
      a.exchange(R"({"id":7,"subscribe":{"channel":"room"}})"
                 "\n"
                 R"({"id":8,"publish":{"channel":"room","data":"three"}})");
  REQUIRE(reply_ids(mixed) == std::vector<std::uint64_t>{7, 8});
  for (const Json& m : mixed) {
    if (m.value("id", 0) == 7) CHECK(m["error"]["code"] == 105);
    if (m.value("id", 0) == 8) CHECK(m.contains("publish"));
  }
}

TEST_CASE("Pushes reach the channel's other clients: a publication, join and leave",
          "[chat][centrifugo]") {
  Chat chat;
  Json a_reply, b_reply;
  Conn& alice = chat.connect("alice", Json::object(), &a_reply);
  Conn& bob = chat.connect("bob", Json::object(), &b_reply);
  const std::string a_id = a_reply["connect"]["client"];
  REQUIRE(bob.call({{"id", 2}, {"subscribe", {{"channel", "room"}}}}).contains("subscribe"));
  CHECK(bob.messages() ==
        std::vector<Json>{join_push("room", b_reply["connect"]["client"], "bob")});
  REQUIRE(alice.call({{"id", 2}, {"subscribe", {{"channel", "room"}}}}).contains("subscribe"));
  const Json alice_info = {{"client", a_id}, {"user", "alice"}};
  CHECK(bob.messages() ==
        std::vector<Json>{{{"push", {{"channel", "room"}, {"join", {{"info", alice_info}}}}}}});
  REQUIRE(alice.call({{"id", 3}, {"publish", {{"channel", "room"}, {"data", {{"n", 1}}}}}})
              .contains("publish"));
  CHECK(bob.messages() == std::vector<Json>{pub_push("room", {{"n", 1}}, a_id, "alice", 1)});
  REQUIRE(alice.call({{"id", 4}, {"unsubscribe", {{"channel", "room"}}}}).contains("unsubscribe"));
  CHECK(bob.messages() ==
        std::vector<Json>{{{"push", {{"channel", "room"}, {"leave", {{"info", alice_info}}}}}}});
  // Nothing more reaches alice once she left.
  (void)alice.messages();
  REQUIRE(
      bob.call({{"id", 3}, {"publish", {{"channel", "room"}, {"data", 2}}}}).contains("publish"));
  CHECK(alice.messages().empty());
}

TEST_CASE("A token's channels are subscribed by the server and pushed after the connect reply",
          "[chat][centrifugo]") {
  const std::string secret = "a-test-secret-of-more-than-32-bytes!";
  centrifuge_test::Settings s;
  s.hmac_secret = secret;
  Chat chat(s);
  Conn& c = chat.open("");
  const std::string token = centrifuge_test::hs256_token(
      {{"sub", "carol"}, {"exp", centrifuge_test::unix_now() + 3600}, {"channels", {"news"}}},
      secret);
  const std::vector<Json> got = c.exchange(Json{{"id", 1}, {"connect", {{"token", token}}}}.dump());
  REQUIRE(got.size() == 3);
  CHECK(got[0]["id"] == 1);
  CHECK(got[0]["connect"]["expires"] == true);
  // The token's exp less the verifier's leeway, in whole seconds, rounded down.
  CHECK(got[0]["connect"]["ttl"].get<int>() >= 3595);
  CHECK(got[0]["connect"]["ttl"].get<int>() <= 3600);
  CHECK(keys(got[1]) == std::set<std::string>{"push"});
  CHECK(got[1]["push"]["channel"] == "news");
  CHECK(got[1]["push"]["subscribe"]["recoverable"] == true);
  CHECK(got[2] == join_push("news", got[0]["connect"]["client"], "carol"));
  // A publication on it comes as any other.
  REQUIRE(chat.bus().publish("news", "\"extra\"").error == std::error_code());
  const std::vector<Json> pushed = c.messages();
  REQUIRE(pushed.size() == 1);
  CHECK(pushed[0]["push"]["channel"] == "news");
  CHECK(pushed[0]["push"]["pub"]["data"] == "extra");
}
