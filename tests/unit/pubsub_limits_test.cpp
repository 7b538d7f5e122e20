// Limits: channel names, the per-subscriber channel limit, payload size, one
// hub per subscriber; each refusal is a clear error and changes nothing.
#include <catch2/catch.hpp>

#include "pubsub_support.h"

using namespace pubsub_test;

TEST_CASE(
    "Channel names are 1 to max_channel_length printable ASCII bytes without quote or backslash",
    "[pubsub][limits]") {
  Limits l;
  l.max_channel_length = 8;
  CHECK_FALSE(validate_channel("chat:1", l));
  CHECK_FALSE(validate_channel("a/b-c_d.", l));
  CHECK_FALSE(validate_channel("!~#$%&'(", l));
  CHECK(validate_channel("", l) == errc::empty_channel);
  CHECK(validate_channel("123456789", l) == errc::channel_too_long);
  CHECK(validate_channel("a b", l) == errc::bad_channel_character);
  CHECK(validate_channel("a\"b", l) == errc::bad_channel_character);
  CHECK(validate_channel("a\\b", l) == errc::bad_channel_character);
  CHECK(validate_channel("a\nb", l) == errc::bad_channel_character);
  CHECK(validate_channel(std::string("a\0b", 3), l) == errc::bad_channel_character);
  CHECK(validate_channel("caf\xc3\xa9", l) == errc::bad_channel_character);
  CHECK(validate_channel("a\x7f", l) == errc::bad_channel_character);
  CHECK(make_error_code(errc::channel_too_long).message().find("max_channel_length") !=
        std::string::npos);
  CHECK(std::error_code(errc::channel_limit).category().name() == std::string("pubsub"));
}

TEST_CASE("Subscribe and publish refuse bad channel names and change nothing", "[pubsub][limits]") {
  Bus bus;
  Hub hub(bus);
  Recorder r;
  CHECK(hub.subscribe(r, "").error == errc::empty_channel);
  CHECK(hub.subscribe(r, std::string(256, 'x')).error == errc::channel_too_long);
  CHECK(hub.subscribe(r, "has space").error == errc::bad_channel_character);
  CHECK(hub.publish("has space", "x").error == errc::bad_channel_character);
  CHECK(bus.publish("", "x").error == errc::empty_channel);
  CHECK(r.channel_count() == 0);
  CHECK(r.hub() == nullptr);
  const HubStats s = hub.stats();
  CHECK(s.subscribe_errors == 3);
  CHECK(s.publish_errors == 1);
  CHECK(s.subscriptions == 0);
  CHECK(bus.stats().channels == 0);
  CHECK_FALSE(hub.subscribe(r, std::string(255, 'x')).error);  // exactly the maximum
}

TEST_CASE("A subscriber can be on at most channel_limit channels (128 by default)",
          "[pubsub][limits]") {
  Bus bus;
  Hub hub(bus);
  Recorder r;
  for (int i = 0; i < 128; ++i) REQUIRE_FALSE(hub.subscribe(r, "c" + std::to_string(i)).error);
  const SubscribeResult refused = hub.subscribe(r, "one-more");
  CHECK(refused.error == errc::channel_limit);
  CHECK(refused.error.message().find("channel_limit") != std::string::npos);
  CHECK(hub.presence("one-more") == 0);
  CHECK(r.channel_count() == 128);
  hub.unsubscribe(r, "c7");
  CHECK_FALSE(hub.subscribe(r, "one-more").error);
  Recorder other;  // the limit is per subscriber
  CHECK_FALSE(hub.subscribe(other, "one-more").error);
}

TEST_CASE("The channel limit is configurable", "[pubsub][limits]") {
  BusOptions o;
  o.limits.channel_limit = 2;
  Bus bus(o);
  Hub hub(bus);
  Recorder r;
  CHECK_FALSE(hub.subscribe(r, "a").error);
  CHECK_FALSE(hub.subscribe(r, "b").error);
  CHECK(hub.subscribe(r, "c").error == errc::channel_limit);
  o.limits.channel_limit = 0;
  CHECK_THROWS_WITH(Bus(o), Catch::Contains("channel_limit"));
}

TEST_CASE("Subscribing twice to one channel is refused", "[pubsub][limits]") {
  Bus bus;
  Hub hub(bus);
  Recorder r;
  hub.subscribe(r, "c");
  CHECK(hub.subscribe(r, "c").error == errc::already_subscribed);
  CHECK(hub.presence("c") == 1);
  hub.publish("c", "x");
  poll_all(hub);
  CHECK(r.data.size() == 1);
}

TEST_CASE("Publications larger than max_data_bytes are refused", "[pubsub][limits]") {
  BusOptions o;
  o.limits.max_data_bytes = 10;
  Bus bus(o);
  Hub hub(bus);
  Recorder r;
  hub.subscribe(r, "c");
  CHECK(hub.publish("c", std::string(11, 'x')).error == errc::data_too_large);
  CHECK_FALSE(hub.publish("c", std::string(10, 'x')).error);
  poll_all(hub);
  CHECK(r.offsets == std::vector<std::uint64_t>{1});  // the refused one took no offset
}

TEST_CASE("A subscriber stays on the hub of its first subscription", "[pubsub][limits]") {
  Bus bus;
  Hub h1(bus), h2(bus);
  Recorder r;
  h1.subscribe(r, "a");
  CHECK(h2.subscribe(r, "b").error == errc::wrong_hub);
  CHECK(h2.unsubscribe(r, "a") == errc::not_subscribed);
  CHECK(h2.unsubscribe_all(r) == 0);
  h1.unsubscribe(r, "a");
  CHECK_FALSE(h2.subscribe(r, "b").error);  // free again once it has no channel
}

TEST_CASE("Hub options are validated", "[pubsub][limits]") {
  Bus bus;
  HubOptions o;
  o.max_events_per_wakeup = 0;
  CHECK_THROWS_WITH(Hub(bus, o), Catch::Contains("max_events_per_wakeup"));
  CHECK(bus.stats().hubs == 0);
}
