// Presence: the subscriber count over every hub, and join / leave events with
// the subscriber's info.
#include <catch2/catch.hpp>

#include "pubsub_support.h"

using namespace pubsub_test;

namespace {
ChannelOptions join_leave_on() {
  ChannelOptions c;
  c.join_leave = true;
  return c;
}
}  // namespace

TEST_CASE("Presence counts the subscribers of a channel over every hub", "[pubsub][presence]") {
  Bus bus;
  Hub h1(bus), h2(bus);
  Recorder a, b, c;
  CHECK(h1.subscribe(a, "room").subscribers == 1);
  CHECK(h2.subscribe(b, "room").subscribers == 2);
  CHECK(h2.subscribe(c, "room").subscribers == 3);
  CHECK(h1.presence("room") == 3);
  CHECK(h2.presence("room") == 3);
  h2.unsubscribe(b, "room");
  CHECK(h1.presence("room") == 2);
  CHECK(h1.presence("elsewhere") == 0);
}

TEST_CASE("Join and leave events carry the subscriber's info and the new count to every hub",
          "[pubsub][presence]") {
  BusOptions o;
  o.channel = join_leave_on();
  Bus bus(o);
  Hub h1(bus), h2(bus);
  Recorder alice(R"({"user":"alice"})"), bob(R"({"user":"bob"})");
  h1.subscribe(alice, "room");
  poll_all(h1);
  h2.subscribe(bob, "room");
  poll_all(h1);
  poll_all(h2);
  h2.unsubscribe(bob, "room");
  poll_all(h1);
  poll_all(h2);
  CHECK(alice.presence == std::vector<std::string>{R"(join:{"user":"alice"}:1)",
                                                   R"(join:{"user":"bob"}:2)",
                                                   R"(leave:{"user":"bob"}:1)"});
  // Bob's own join reached him; his leave did not (he had left).
  CHECK(bob.presence == std::vector<std::string>{R"(join:{"user":"bob"}:2)"});
  CHECK(h1.stats().delivery.presence_deliveries == 3);
}

TEST_CASE("Presence events are encoded once per hub", "[pubsub][presence][encode]") {
  BusOptions o;
  o.channel = join_leave_on();
  Bus bus(o);
  int encodes = 0;
  HubOptions ho;
  ho.encode_presence = [&](const PresenceEvent& e) {
    ++encodes;
    return std::make_shared<const std::string>(e.info);
  };
  Hub hub(bus, ho);
  Recorder a("a"), b("b"), c("c");
  hub.subscribe(a, "room");
  hub.subscribe(b, "room");
  poll_all(hub);  // a's join (to a), b's join (to a and b)
  encodes = 0;
  hub.subscribe(c, "room");
  poll_all(hub);
  CHECK(encodes == 1);
  REQUIRE(a.presence_frames.size() == 3);
  CHECK(*a.presence_frames[2] == "c");
  CHECK(a.presence_frames[2].get() == c.presence_frames[0].get());
}

TEST_CASE("Without join_leave no presence events are sent, the count is still kept",
          "[pubsub][presence]") {
  Bus bus;
  Hub hub(bus);
  Recorder a, b;
  hub.subscribe(a, "room");
  hub.subscribe(b, "room");
  hub.unsubscribe(b, "room");
  CHECK(poll_all(hub) == 0);
  CHECK(a.presence.empty());
  CHECK(hub.presence("room") == 1);
}

TEST_CASE("A subscriber destroyed, or a hub destroyed, sends its leave events",
          "[pubsub][presence]") {
  BusOptions o;
  o.channel = join_leave_on();
  Bus bus(o);
  Hub h1(bus);
  Recorder watcher("w");
  h1.subscribe(watcher, "room");
  {
    Recorder gone("gone");
    h1.subscribe(gone, "room");
  }
  {
    Recorder far("far");
    Hub h2(bus);
    h2.subscribe(far, "room");
    CHECK(bus.presence("room") == 2);
  }  // h2 is destroyed first: far leaves through it
  poll_all(h1);
  CHECK(watcher.presence == std::vector<std::string>{"join:w:1", "join:gone:2", "leave:gone:1",
                                                     "join:far:2", "leave:far:1"});
  CHECK(bus.presence("room") == 1);
}
