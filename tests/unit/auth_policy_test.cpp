// Channel permissions (channel_policy.h, channel_name.h): every namespace
// rule, user-limited channels, unknown namespaces, and the config file's
// errors.
#include <heartwheel/auth/channel_name.h>
#include <heartwheel/auth/channel_policy.h>

#include "auth_support.h"

using namespace heartwheel::auth;
using Catch::Contains;

namespace {

const Access kAnonymous{"", false, false};
const Access kAlice{"alice", false, false};
const Access kAliceSubscribed{"alice", false, true};
const Access kAliceWithToken{"alice", true, false};
const Access kAnonymousSubscribed{"", false, true};
const Access kAnonymousWithToken{"", true, false};

std::string code(Decision d) { return std::string(code_name(d.code)); }

// Every combination of subscribe and publish rule, one namespace each.
const char* kConfig = R"({"namespaces": [
  {"name": "",        "subscribe": "user",  "publish": "subscriber"},
  {"name": "open",    "subscribe": "any",   "publish": "user"},
  {"name": "private", "subscribe": "token", "publish": "subscriber", "history": false},
  {"name": "news",    "subscribe": "any",   "publish": "none", "presence": false},
  {"name": "dm",      "subscribe": "token", "publish": "subscriber"}
]})";

}  // namespace

TEST_CASE("Channel names: printable ASCII, 1 to 255 bytes, with a namespace and a user list",
          "[auth][policy]") {
  CHECK(is_valid_channel_name("chat:lobby"));
  CHECK(is_valid_channel_name(std::string(255, 'a')));
  CHECK_FALSE(is_valid_channel_name(std::string(256, 'a')));
  CHECK_FALSE(is_valid_channel_name(""));
  CHECK_FALSE(is_valid_channel_name("has space"));
  CHECK_FALSE(is_valid_channel_name("caf\xc3\xa9"));
  CHECK_FALSE(is_valid_channel_name("quote\""));
  CHECK_FALSE(is_valid_channel_name("back\\slash"));
  CHECK_FALSE(is_valid_channel_name(std::string("nul\0x", 5)));

  CHECK(split_channel("lobby").name_space == "");
  CHECK(split_channel("chat:lobby").name_space == "chat");
  CHECK(split_channel("a:b:c").name_space == "a");
  const ChannelParts dm = split_channel("dm:#alice,bob");
  CHECK(dm.name_space == "dm");
  CHECK(dm.user_limited);
  CHECK(dm.users == "alice,bob");
  const ChannelParts hash_first = split_channel("notes#a:b");
  CHECK(hash_first.name_space == "");  // the ':' is in the user list
  CHECK(hash_first.users == "a:b");

  CHECK(user_in_list("alice,bob", "bob"));
  CHECK(user_in_list("alice", "alice"));
  CHECK_FALSE(user_in_list("alice,bob", "ali"));
  CHECK_FALSE(user_in_list("alice,bob", "alice,bob"));
  CHECK_FALSE(user_in_list("alice,,bob", ""));  // anonymous is never listed
  CHECK_FALSE(user_in_list("", ""));
}

TEST_CASE("Without a config every channel is subscribe user, publish subscriber",
          "[auth][policy]") {
  const ChannelPolicy policy;
  CHECK_FALSE(policy.configured());
  for (const std::string channel : {"lobby", "chat:lobby", "anything:goes"}) {
    INFO(channel);
    CHECK(policy.can_subscribe(channel, kAlice).allowed());
    CHECK(code(policy.can_subscribe(channel, kAnonymous)) == "permission_denied");
    CHECK(policy.can_publish(channel, kAliceSubscribed).allowed());
    CHECK(code(policy.can_publish(channel, kAlice)) == "permission_denied");
    CHECK(policy.can_read_history(channel, kAlice).allowed());
    CHECK(policy.can_read_presence(channel, kAlice).allowed());
    CHECK_FALSE(policy.can_read_history(channel, kAnonymous).allowed());
  }
}

TEST_CASE("subscribe any, user and token", "[auth][policy]") {
  const ChannelPolicy policy = ChannelPolicy::from_json(kConfig);
  // any: anonymous clients too.
  CHECK(policy.can_subscribe("open:lobby", kAnonymous).allowed());
  CHECK(policy.can_subscribe("news:today", kAlice).allowed());
  // user: authenticated clients only.
  CHECK(policy.can_subscribe("lobby", kAlice).allowed());
  const Decision anon = policy.can_subscribe("lobby", kAnonymous);
  CHECK(anon.code == errc::permission_denied);
  CHECK(anon.reason == "subscribing here needs an authenticated user");
  // token: a subscription token, whoever asks.
  CHECK(policy.can_subscribe("private:room", kAliceWithToken).allowed());
  CHECK(policy.can_subscribe("private:room", kAnonymousWithToken).allowed());
  const Decision no_token = policy.can_subscribe("private:room", kAlice);
  CHECK(no_token.code == errc::permission_denied);
  CHECK(no_token.reason == "subscribing here needs a subscription token for the channel");
  // Already subscribed is no reason to subscribe again without a token.
  CHECK_FALSE(policy.can_subscribe("private:room", kAliceSubscribed).allowed());
}

TEST_CASE("publish none, user and subscriber", "[auth][policy]") {
  const ChannelPolicy policy = ChannelPolicy::from_json(kConfig);
  // none: no client, subscribed or not.
  const Decision none = policy.can_publish("news:today", kAliceSubscribed);
  CHECK(none.code == errc::permission_denied);
  CHECK(none.reason == "clients may not publish in this namespace");
  // user: any authenticated client, subscribed or not.
  CHECK(policy.can_publish("open:lobby", kAlice).allowed());
  CHECK_FALSE(policy.can_publish("open:lobby", kAnonymousSubscribed).allowed());
  // subscriber: only clients subscribed to the channel (anonymous ones too).
  CHECK(policy.can_publish("lobby", kAliceSubscribed).allowed());
  CHECK(policy.can_publish("lobby", kAnonymousSubscribed).allowed());
  const Decision outsider = policy.can_publish("lobby", kAlice);
  CHECK(outsider.code == errc::permission_denied);
  CHECK(outsider.reason == "only subscribers of the channel may publish in it");
  CHECK_FALSE(policy.can_publish("private:room", kAliceWithToken).allowed());
}

TEST_CASE("history and presence: off per namespace, else for subscribers and who may subscribe",
          "[auth][policy]") {
  const ChannelPolicy policy = ChannelPolicy::from_json(kConfig);
  // history false in "private": nobody, not even subscribers.
  const Decision off = policy.can_read_history("private:room", kAliceSubscribed);
  CHECK(off.code == errc::permission_denied);
  CHECK(off.reason == "history is off in this namespace");
  CHECK(policy.can_read_presence("private:room", kAliceSubscribed).allowed());
  CHECK(policy.can_read_presence("private:room", kAliceWithToken).allowed());
  CHECK_FALSE(policy.can_read_presence("private:room", kAlice).allowed());
  // presence false in "news".
  CHECK(policy.can_read_history("news:today", kAnonymous).allowed());
  CHECK(policy.can_read_presence("news:today", kAliceSubscribed).reason ==
        "presence is off in this namespace");
  // On: whoever may subscribe (user in ""), or is subscribed.
  CHECK(policy.can_read_history("lobby", kAlice).allowed());
  CHECK_FALSE(policy.can_read_history("lobby", kAnonymous).allowed());
  CHECK(policy.can_read_history("lobby", kAnonymousSubscribed).allowed());
}

TEST_CASE("User-limited channels admit only the listed users, whatever the namespace says",
          "[auth][policy]") {
  const ChannelPolicy policy = ChannelPolicy::from_json(kConfig);
  // "dm" needs a token; a listed user needs none.
  CHECK(policy.can_subscribe("dm:#alice,bob", kAlice).allowed());
  CHECK(policy.can_subscribe("dm:#alice,bob", Access{"bob", false, false}).allowed());
  const Decision carol = policy.can_subscribe("dm:#alice,bob", Access{"carol", true, false});
  CHECK(carol.code == errc::permission_denied);
  CHECK(carol.reason == "only the users listed after '#' in the channel name may use it");
  CHECK_FALSE(policy.can_subscribe("dm:#alice,bob", kAnonymousWithToken).allowed());
  // "open" lets anyone subscribe, but not to a user-limited channel.
  CHECK_FALSE(policy.can_subscribe("open:#alice", kAnonymous).allowed());
  CHECK_FALSE(policy.can_subscribe("open:#alice", Access{"bob", false, false}).allowed());
  CHECK(policy.can_subscribe("open:#alice", kAlice).allowed());
  // The default namespace: "notes#42".
  CHECK(policy.can_subscribe("notes#42", Access{"42", false, false}).allowed());
  CHECK_FALSE(policy.can_subscribe("notes#42", Access{"4", false, false}).allowed());
  // The other operations are refused to everyone else too.
  const Access carol_subscribed{"carol", false, true};
  CHECK_FALSE(policy.can_publish("dm:#alice,bob", carol_subscribed).allowed());
  CHECK_FALSE(policy.can_read_history("dm:#alice,bob", carol_subscribed).allowed());
  CHECK_FALSE(policy.can_read_presence("dm:#alice,bob", carol_subscribed).allowed());
  CHECK(policy.can_publish("dm:#alice,bob", kAliceSubscribed).allowed());
  CHECK(policy.can_read_presence("dm:#alice,bob", kAlice).allowed());
  // "open" publishes for any user, but a user-limited channel keeps its list.
  CHECK_FALSE(policy.can_publish("open:#alice", Access{"bob", false, false}).allowed());
  CHECK(policy.can_publish("open:#alice", kAlice).allowed());
}

TEST_CASE("A channel in an unknown namespace is unknown_channel, a bad name is bad_channel",
          "[auth][policy]") {
  const ChannelPolicy policy = ChannelPolicy::from_json(kConfig);
  for (const std::string channel : {"secret:x", "secret:#alice"}) {
    INFO(channel);
    const Decision d = policy.can_subscribe(channel, kAliceWithToken);
    CHECK(d.code == errc::unknown_channel);
    CHECK(d.reason == "the channel's namespace is not configured");
    CHECK(code(policy.can_publish(channel, kAliceSubscribed)) == "unknown_channel");
    CHECK(code(policy.can_read_history(channel, kAliceSubscribed)) == "unknown_channel");
    CHECK(code(policy.can_read_presence(channel, kAliceSubscribed)) == "unknown_channel");
  }
  CHECK(policy.rules_for("secret:x") == nullptr);
  REQUIRE(policy.rules_for("open:x") != nullptr);
  CHECK(policy.rules_for("open:x")->subscribe == SubscribeRule::any);

  // Without "" in the config, plain channels are unknown too.
  const ChannelPolicy only_chat =
      ChannelPolicy::from_json(R"({"namespaces":[{"name":"chat","subscribe":"any"}]})");
  CHECK(code(only_chat.can_subscribe("lobby", kAlice)) == "unknown_channel");
  CHECK(only_chat.can_subscribe("chat:lobby", kAnonymous).allowed());

  for (const std::string& bad : {std::string(), std::string(256, 'x'), std::string("a b"),
                                std::string("caf\xc3\xa9")}) {
    CHECK(code(policy.can_subscribe(bad, kAlice)) == "bad_channel");
    CHECK(code(ChannelPolicy().can_publish(bad, kAliceSubscribed)) == "bad_channel");
  }
}

TEST_CASE("A namespace object needs only a name, the rest defaults", "[auth][policy]") {
  const ChannelPolicy policy = ChannelPolicy::from_json(R"({"namespaces":[{"name":""}]})");
  REQUIRE(policy.configured());
  const auto all = policy.namespaces();
  REQUIRE(all.size() == 1);
  CHECK(all[0].name == "");
  CHECK(all[0].subscribe == SubscribeRule::user);
  CHECK(all[0].publish == PublishRule::subscriber);
  CHECK(all[0].history);
  CHECK(all[0].presence);
  CHECK(rule_name(SubscribeRule::token) == "token");
  CHECK(rule_name(PublishRule::none) == "none");
}

TEST_CASE("Config errors name the file and the place", "[auth][policy]") {
  const auto error_of = [](const std::string& text) -> std::string {
    try {
      ChannelPolicy::from_json(text, "channels.json");
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(error_of(R"({"namespaces":[{"name":"a","subscribe":"tokn"}]})") ==
        "channels.json: namespaces[0].subscribe: \"tokn\" is not one of any, user, token");
  CHECK(error_of(R"({"namespaces":[{"name":"a"},{"name":"b","publish":"all"}]})") ==
        "channels.json: namespaces[1].publish: \"all\" is not one of none, user, subscriber");
  CHECK(error_of(R"({"namespaces":[{"name":"a","subscribe":1}]})") ==
        "channels.json: namespaces[0].subscribe: must be a string, one of any, user, token");
  CHECK(error_of(R"({"namespaces":[{"name":"a","history":"yes"}]})") ==
        "channels.json: namespaces[0].history: must be true or false, not string");
  CHECK(error_of(R"({"namespaces":[{"name":"a","presence":1}]})") ==
        "channels.json: namespaces[0].presence: must be true or false, not number");
  CHECK(error_of(R"({"namespaces":[{"name":"a","allow_publish":true}]})") ==
        "channels.json: namespaces[0]: unknown key \"allow_publish\" (known: name, subscribe, "
        "publish, history, presence)");
  CHECK(error_of(R"({"namespaces":[],"extra":1})") ==
        "channels.json: unknown key \"extra\" (known: namespaces)");
  CHECK(error_of(R"({"namespaces":[{"subscribe":"any"}]})") ==
        "channels.json: namespaces[0]: has no \"name\" (\"\" is the default namespace)");
  CHECK(error_of(R"({"namespaces":[{"name":"chat"},{"name":"x"},{"name":"chat"}]})") ==
        "channels.json: namespaces[2]: namespace \"chat\" is already defined by namespaces[0]");
  CHECK(error_of(R"({"namespaces":[{"name":"a:b"}]})") ==
        "channels.json: namespaces[0].name: \"a:b\" is not a namespace name: printable ASCII "
        "without ':', '#', '\"' or '\\', at most 255 bytes (\"\" is the default namespace)");
  CHECK_THAT(error_of(R"({"namespaces":[{"name":"a#"}]})"), Contains("is not a namespace name"));
  CHECK_THAT(error_of(R"({"namespaces":[{"name":7}]})"), Contains("namespaces[0].name: must be"));
  CHECK(error_of(R"({"namespaces":{}})") ==
        "channels.json: namespaces: must be an array, not object");
  CHECK(error_of(R"({"namespaces":[1]})") ==
        "channels.json: namespaces[0]: must be an object, not number");
  CHECK(error_of(R"({})") == "channels.json: has no \"namespaces\" array");
  CHECK(error_of(R"([])") ==
        "channels.json: must be a JSON object {\"namespaces\": [...]}, not array");
  // Repeated keys are refused, not silently resolved to the last.
  CHECK(error_of(R"({"namespaces":[{"name":"a","subscribe":"any","subscribe":"token"}]})") ==
        "channels.json: key \"subscribe\" appears twice in one object");
  // Syntax errors say where.
  CHECK_THAT(error_of("{\"namespaces\": [\n  {\"name\": \"a\",}\n]}"),
             Contains("channels.json: not valid JSON at line 2, column 16"));
  CHECK_THAT(error_of(""), Contains("not valid JSON at line 1"));
  // Constructed from rules directly: the same name checks.
  CHECK_THROWS_WITH(ChannelPolicy(std::vector<NamespaceRules>{{"a"}, {"a"}}),
                    "namespace \"a\" is defined twice");
  CHECK_THROWS_WITH(ChannelPolicy(std::vector<NamespaceRules>{{"a:b"}}),
                    Contains("namespace \"a:b\""));
}

TEST_CASE("The config loads from a file, missing and empty files are refused", "[auth][policy]") {
  auth_test::TempDir dir;
  const ChannelPolicy policy = ChannelPolicy::from_file(dir.write("channels.json", kConfig));
  CHECK(policy.namespaces().size() == 5);
  CHECK(policy.can_subscribe("open:x", kAnonymous).allowed());

  const std::string missing = dir.path("nope.json");
  CHECK_THROWS_WITH(ChannelPolicy::from_file(missing),
                    "channels config " + missing + ": no such file");
  const std::string empty = dir.write("empty.json", "\n");
  CHECK_THROWS_WITH(ChannelPolicy::from_file(empty), "channels config " + empty + ": empty");
  const std::string bad = dir.write("bad.json", R"({"namespaces":[{"name":"a","x":1}]})");
  CHECK_THROWS_WITH(ChannelPolicy::from_file(bad), Contains(bad + ": namespaces[0]: unknown key"));
}
