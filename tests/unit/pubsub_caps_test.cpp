// What a stranger can make the Bus hold (issue 34): a publish nobody can hear
// keeps nothing, the channel cap frees orphans (channels kept only by their
// history) before it refuses anyone, and the history budget counts the
// memory a publication holds, not only its data.
#include <catch2/catch.hpp>
#include <string>

#include "pubsub_support.h"

using namespace pubsub_test;

namespace {
ChannelOptions history_after_subscribers(std::size_t size) {
  ChannelOptions c = with_history(size);
  c.history_before_subscribers = false;  // the Bus's default
  return c;
}

BusOptions capped(std::size_t max_channels) {
  BusOptions o;
  o.channel = history_after_subscribers(10);
  o.max_channels = max_channels;
  o.shards = 1;  // one shard: "the oldest orphan" is the oldest of all
  return o;
}

// Subscribes, publishes one and leaves: an orphan kept by its history.
void make_orphan(Hub& hub, const std::string& channel) {
  Recorder r;
  REQUIRE_FALSE(hub.subscribe(r, channel).error);
  REQUIRE(hub.publish(channel, "x").position.offset == 1);
}  // ~Recorder unsubscribes
}  // namespace

TEST_CASE("A publish to a channel without state keeps nothing, even with history configured",
          "[pubsub][caps]") {
  ManualBus m(history_after_subscribers(10));
  Hub hub(m.bus);
  for (int i = 0; i < 100; ++i) {
    const PublishResult r = hub.publish(std::string(255 - 3, 'n') + std::to_string(100 + i), "x");
    CHECK_FALSE(r.error);
    CHECK(r.position == StreamPosition{});  // offset 0, epoch "": reached no one
  }
  BusStats s = m.bus.stats();
  CHECK(s.channels == 0);
  CHECK(s.history_bytes == 0);
  CHECK(s.unheard == 100);
  CHECK(s.publications == 100);
  // Once someone subscribed, the stream exists and outlives them for its
  // history (a client that drops out recovers what it missed).
  Recorder r;
  const SubscribeResult sub = hub.subscribe(r, "room");
  CHECK(hub.publish("room", "1").position.offset == 1);
  hub.unsubscribe(r, "room");
  CHECK(hub.publish("room", "2").position.offset == 2);
  Recorder back;
  const SubscribeResult again =
      hub.subscribe(back, "room", {StreamPosition{0, sub.position.epoch}});
  CHECK(again.recovered);
  CHECK(again.publications.size() == 2);
  CHECK(m.bus.stats().unheard == 100);
}

TEST_CASE("At max_channels the oldest orphan is freed first, only without orphans is one refused",
          "[pubsub][caps]") {
  Bus bus(capped(3));
  Hub hub(bus);
  make_orphan(hub, "a");
  make_orphan(hub, "b");
  make_orphan(hub, "c");
  const StreamPosition a_pos = hub.history("a", 0).position;
  REQUIRE(a_pos.offset == 1);
  CHECK(bus.stats().channels == 3);

  Recorder d, e, f, g;
  REQUIRE_FALSE(hub.subscribe(d, "d").error);  // frees "a", the oldest orphan
  BusStats s = bus.stats();
  CHECK(s.channels == 3);
  CHECK(s.channels_evicted == 1);
  CHECK(s.channels_refused == 0);
  CHECK(hub.history("a", 10).position == StreamPosition{});  // gone: no stream
  CHECK(hub.history("b", 10).publications.size() == 1);      // kept
  REQUIRE_FALSE(hub.subscribe(e, "e").error);                // frees "b"
  REQUIRE_FALSE(hub.subscribe(f, "f").error);                // frees "c"
  CHECK(bus.stats().channels_evicted == 3);
  // Every channel has a subscriber now: nothing to free, the new one is refused.
  CHECK(hub.subscribe(g, "g").error == errc::too_many_channels);
  CHECK(bus.stats().channels_refused == 1);
  CHECK(bus.stats().channels == 3);
  // A client coming back to "a" learns that its history is gone.
  hub.unsubscribe(d, "d");  // no history: freed at once
  Recorder late;
  const SubscribeResult back = hub.subscribe(late, "a", {a_pos});
  CHECK_FALSE(back.error);
  CHECK_FALSE(back.recovered);
  CHECK(back.position.epoch != a_pos.epoch);
}

TEST_CASE("A publish that needs a channel at the cap frees an orphan too", "[pubsub][caps]") {
  BusOptions o = capped(2);
  o.channel.history_before_subscribers = true;
  Bus bus(o);
  Hub hub(bus);
  CHECK(hub.publish("a", "x").position.offset == 1);  // made without subscribers: orphans
  CHECK(hub.publish("b", "x").position.offset == 1);
  CHECK(hub.publish("c", "x").position.offset == 1);  // frees "a"
  CHECK(bus.stats().channels == 2);
  CHECK(bus.stats().channels_evicted == 1);
  CHECK(hub.history("a", 10).publications.empty());
  CHECK(hub.history("c", 10).publications.size() == 1);
}

TEST_CASE("History bytes count what a publication holds: its object, strings and slot",
          "[pubsub][caps]") {
  ManualBus m(with_history(10, 30s));
  Hub hub(m.bus);
  const std::string name(255, 'n');
  REQUIRE(hub.publish(name, "x", std::string(40, 'i')).position.offset == 1);
  const std::size_t one = m.bus.stats().history_bytes;
  // The object in its shared block, the name's heap copy (256 bytes), the
  // info (41): more than 255 + 40 + sizeof(Publication), where data + info
  // counted 41 before.
  CHECK(one >= sizeof(Publication) + 255 + 40);
  CHECK(one <= 1024);
  hub.publish(name, "y", std::string(40, 'i'));
  const std::size_t two = m.bus.stats().history_bytes;
  CHECK(two > one);
  CHECK(two - one <= one);  // the second pays no slots (four were made)
  m.clock.advance(30s);
  m.bus.sweep();
  CHECK(m.bus.stats().history_bytes == 0);
  CHECK(m.bus.stats().channels == 0);
}

TEST_CASE("max_history_bytes holds the memory of many small publications to long names",
          "[pubsub][caps]") {
  BusOptions o;
  o.channel = with_history(1000, 60s);
  o.max_history_bytes = 200000;
  Bus bus(o);
  Hub hub(bus);
  for (int i = 0; i < 5000; ++i)
    REQUIRE_FALSE(hub.publish(std::string(252, 'h') + std::to_string(100 + i % 20), "1").error);
  const BusStats s = bus.stats();
  CHECK(s.history_bytes <= o.max_history_bytes);
  CHECK(s.history_evictions > 0);
  // Each kept publication holds more than its name: far fewer than 5,000
  // fit (counting data and info, all 5,000 did: 5 KB).
  CHECK(s.history_publications * 255 < o.max_history_bytes);
}
