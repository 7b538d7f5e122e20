// History and recovery on a manual clock: the bounded ring (size, TTL),
// offsets and epochs, recovery from {offset, epoch}, history(limit), and the
// freeing of channels nobody needs any more.
#include <catch2/catch.hpp>

#include "pubsub_support.h"

using namespace pubsub_test;

namespace {
std::vector<std::uint64_t> offsets_of(const std::vector<PublicationPtr>& ps) {
  std::vector<std::uint64_t> out;
  for (const auto& p : ps) out.push_back(p->offset);
  return out;
}
}  // namespace

TEST_CASE("history(limit) returns the latest publications oldest first, at most history_size",
          "[pubsub][history]") {
  ManualBus m(with_history(5));
  Hub hub(m.bus);
  for (int i = 1; i <= 8; ++i)
    REQUIRE(hub.publish("c", "m" + std::to_string(i)).position.offset == std::uint64_t(i));

  HistoryResult h = hub.history("c", 100);
  CHECK(offsets_of(h.publications) == std::vector<std::uint64_t>{4, 5, 6, 7, 8});
  CHECK(h.publications.front()->data == "m4");
  CHECK(h.position.offset == 8);
  CHECK(h.position.epoch.size() == 8);
  CHECK(offsets_of(hub.history("c", 2).publications) == std::vector<std::uint64_t>{7, 8});
  h = hub.history("c", 0);  // the position only
  CHECK(h.publications.empty());
  CHECK(h.position.offset == 8);
  CHECK(hub.history("nothing-here", 10).position == StreamPosition{});
  CHECK(hub.history("bad name", 10).error == errc::bad_channel_character);
}

TEST_CASE("remove_history forgets the publications and keeps the stream's position",
          "[pubsub][history]") {
  ManualBus m(with_history(10));
  Hub hub(m.bus);
  Recorder r;
  hub.subscribe(r, "c");
  for (int i = 1; i <= 3; ++i) hub.publish("c", "m" + std::to_string(i));
  const StreamPosition before = hub.history("c", 0).position;
  std::error_code removed = make_error_code(errc::unavailable);
  hub.remove_history("c", [&](std::error_code ec) { removed = ec; });
  CHECK_FALSE(removed);
  HistoryResult h = hub.history("c", 10);
  CHECK(h.publications.empty());
  CHECK(h.position == before);  // offset 3, the same epoch
  CHECK(hub.publish("c", "m4").position == StreamPosition{4, before.epoch});
  Recorder late;  // recovering from offset 1 misses 2 and 3: they are gone
  const SubscribeResult s = hub.subscribe(late, "c", {.since = StreamPosition{1, before.epoch}});
  CHECK_FALSE(s.recovered);
  hub.remove_history("bad name", [&](std::error_code ec) { removed = ec; });
  CHECK(removed == errc::bad_channel_character);
}

TEST_CASE("A publish with the idempotency key of one within its window gets that one's result",
          "[pubsub][history][idempotency]") {
  ManualBus m(with_history(10));
  Hub hub(m.bus);
  Recorder r;
  hub.subscribe(r, "c");
  PublishOptions once;
  once.idempotency_key = "order-42";
  once.idempotency_window = 5min;
  const PublishResult first = m.bus.publish("c", "a", {}, once);
  REQUIRE(first.position.offset == 1);
  CHECK_FALSE(first.duplicate);
  const PublishResult retry = m.bus.publish("c", "a again", {}, once);
  CHECK(retry.duplicate);
  CHECK(retry.position == first.position);
  CHECK_FALSE(m.bus.publish("other", "a", {}, once).duplicate);  // keys are per channel
  m.clock.advance(5min);  // the window passed: the key is forgotten
  const PublishResult later = m.bus.publish("c", "a later", {}, once);
  CHECK_FALSE(later.duplicate);
  CHECK(later.position.offset == 2);
  poll_all(hub);
  CHECK(r.data == std::vector<std::string>{"a", "a later"});  // delivered once each
}

TEST_CASE("Publications older than history_ttl leave the history", "[pubsub][history][ttl]") {
  ManualBus m(with_history(100, 10s));
  Hub hub(m.bus);
  hub.publish("c", "old");
  m.clock.advance(6s);
  hub.publish("c", "newer");
  CHECK(hub.history("c", 10).publications.size() == 2);
  m.clock.advance(4s);  // "old" is exactly 10 s old: gone
  auto h = hub.history("c", 10);
  REQUIRE(h.publications.size() == 1);
  CHECK(h.publications[0]->data == "newer");
  CHECK(h.position.offset == 2);  // offsets continue: the stream is not lost yet
}

TEST_CASE("A resubscribe with the last seen position recovers exactly what was missed",
          "[pubsub][history][recovery]") {
  ManualBus m(with_history(10));
  Hub hub(m.bus);
  Recorder live, client;
  hub.subscribe(live, "c");  // keeps the channel alive
  const SubscribeResult first = hub.subscribe(client, "c");
  for (int i = 1; i <= 3; ++i) hub.publish("c", std::to_string(i));
  poll_all(hub);
  CHECK(client.offsets == std::vector<std::uint64_t>{1, 2, 3});
  const StreamPosition seen{3, first.position.epoch};

  hub.unsubscribe(client, "c");  // the client disconnects
  for (int i = 4; i <= 6; ++i) hub.publish("c", std::to_string(i));
  poll_all(hub);

  Recorder back;
  const SubscribeResult r = hub.subscribe(back, "c", {seen});
  CHECK(r.recovered);
  CHECK(offsets_of(r.publications) == std::vector<std::uint64_t>{4, 5, 6});
  CHECK(r.position == StreamPosition{6, seen.epoch});
  hub.publish("c", "7");
  poll_all(hub);
  CHECK(back.offsets == std::vector<std::uint64_t>{7});  // live continues after the recovered
  CHECK(hub.stats().recovered == 1);
}

TEST_CASE(
    "Recovery and live delivery neither overlap nor leave a gap while the hub's inbox is behind",
    "[pubsub][history][recovery]") {
  ManualBus m(with_history(10));
  Hub hub(m.bus);
  Recorder live;
  hub.subscribe(live, "c");
  const std::string epoch = hub.history("c", 0).position.epoch;
  hub.publish("c", "1");
  poll_all(hub);
  hub.publish("c", "2");  // in the inbox, not delivered on this hub yet
  hub.publish("c", "3");
  Recorder back;
  const SubscribeResult r = hub.subscribe(back, "c", {StreamPosition{0, epoch}});
  CHECK(r.recovered);
  CHECK(offsets_of(r.publications) ==
        std::vector<std::uint64_t>{1});  // up to what the hub delivered
  CHECK(r.position.offset == 1);
  poll_all(hub);
  CHECK(back.offsets == std::vector<std::uint64_t>{2, 3});  // the rest arrive live
}

TEST_CASE("Recovery fails when the history no longer reaches back or the epoch changed",
          "[pubsub][history][recovery]") {
  ManualBus m(with_history(3));
  Hub hub(m.bus);
  Recorder keep;
  hub.subscribe(keep, "c");
  for (int i = 1; i <= 6; ++i) hub.publish("c", std::to_string(i));
  poll_all(hub);
  const std::string epoch = hub.history("c", 0).position.epoch;

  SECTION("offset + 1 was evicted by the size bound") {
    Recorder r;
    const SubscribeResult s = hub.subscribe(r, "c", {StreamPosition{2, epoch}});
    CHECK_FALSE(s.recovered);
    CHECK(s.publications.empty());
    CHECK(s.position == StreamPosition{6, epoch});
    CHECK(hub.stats().not_recovered == 1);
  }
  SECTION("the oldest kept one is exactly offset + 1") {
    Recorder r;
    const SubscribeResult s = hub.subscribe(r, "c", {StreamPosition{3, epoch}});
    CHECK(s.recovered);
    CHECK(offsets_of(s.publications) == std::vector<std::uint64_t>{4, 5, 6});
  }
  SECTION("nothing was missed") {
    Recorder r;
    const SubscribeResult s = hub.subscribe(r, "c", {StreamPosition{6, epoch}});
    CHECK(s.recovered);
    CHECK(s.publications.empty());
  }
  SECTION("another epoch") {
    Recorder r;
    const SubscribeResult s = hub.subscribe(r, "c", {StreamPosition{5, "00000000"}});
    CHECK_FALSE(s.recovered);
    CHECK(s.publications.empty());
    CHECK(s.position.epoch == epoch);
  }
  SECTION("a position from the future") {
    Recorder r;
    CHECK_FALSE(hub.subscribe(r, "c", {StreamPosition{7, epoch}}).recovered);
  }
  SECTION("expired by TTL") {
    m.clock.advance(61s);
    Recorder r;
    const SubscribeResult s = hub.subscribe(r, "c", {StreamPosition{5, epoch}});
    CHECK_FALSE(s.recovered);
    CHECK(s.position == StreamPosition{6, epoch});  // subscribers kept the stream: same epoch
  }
}

TEST_CASE(
    "A channel whose history expired with no subscribers is freed and comes back with a new epoch",
    "[pubsub][history][epoch]") {
  ManualBus m(with_history(10, 5s));
  Hub hub(m.bus);
  hub.publish("c", "x");
  const StreamPosition before = hub.history("c", 0).position;
  CHECK(before.offset == 1);
  CHECK(m.bus.stats().channels == 1);
  m.clock.advance(5s);
  m.bus.sweep();
  CHECK(m.bus.stats().channels == 0);
  CHECK(m.bus.stats().channels_freed == 1);

  Recorder r;
  const SubscribeResult s = hub.subscribe(r, "c", {before});
  CHECK_FALSE(s.recovered);
  CHECK(s.position.offset == 0);
  CHECK(s.position.epoch != before.epoch);
  hub.publish("c", "y");
  poll_all(hub);
  CHECK(r.offsets == std::vector<std::uint64_t>{1});  // offsets restart in the new epoch
}

TEST_CASE("One-off channels leave nothing behind once their history expires",
          "[pubsub][history][memory]") {
  ManualBus m(with_history(4, 30s));
  Hub hub(m.bus);
  for (int i = 0; i < 1000; ++i) {
    Recorder r;
    hub.subscribe(r, "tmp-" + std::to_string(i));
    hub.publish("tmp-" + std::to_string(i), "hello");
    hub.publish("never-subscribed-" + std::to_string(i), "hello");
  }  // every recorder unsubscribed on destruction
  poll_all(hub);
  BusStats s = m.bus.stats();
  CHECK(s.channels == 2000);  // history keeps them for the TTL
  CHECK(s.history_publications == 2000);
  CHECK(hub.stats().channels == 0);
  m.clock.advance(29s);
  m.bus.sweep();
  CHECK(m.bus.stats().channels == 2000);
  m.clock.advance(1s);
  m.bus.sweep();
  s = m.bus.stats();
  CHECK(s.channels == 0);
  CHECK(s.history_publications == 0);
  CHECK(s.history_bytes == 0);
}

TEST_CASE("Without history a channel exists only while it has subscribers",
          "[pubsub][history][memory]") {
  ManualBus m;  // history_size 0
  Hub hub(m.bus);
  const PublishResult unheard = hub.publish("empty", "x");
  CHECK_FALSE(unheard.error);
  CHECK(unheard.position == StreamPosition{});  // nobody heard it: no stream
  CHECK(m.bus.stats().channels == 0);
  Recorder r;
  hub.subscribe(r, "c");
  CHECK(hub.publish("c", "x").position.offset == 1);
  CHECK(hub.history("c", 10).publications.empty());
  hub.unsubscribe(r, "c");
  CHECK(m.bus.stats().channels == 0);
}

TEST_CASE("Channel options can differ by name", "[pubsub][history]") {
  BusOptions o;
  o.channel_options = [](std::string_view name) {
    if (name.starts_with("chat:")) return with_history(2, 10s);
    if (name.starts_with("bad:")) return with_history(2, 0s);  // invalid: replaced and counted
    return ChannelOptions{};
  };
  Bus bus(o);
  Hub hub(bus);
  for (int i = 0; i < 3; ++i) {
    hub.publish("chat:a", "x");
    hub.publish("typing:a", "x");
    hub.publish("bad:a", "x");
  }
  CHECK(hub.history("chat:a", 10).publications.size() == 2);
  CHECK(hub.history("typing:a", 10).publications.empty());
  CHECK(hub.history("bad:a", 10).publications.empty());
  CHECK(bus.stats().bad_channel_options == 3);
}

TEST_CASE("Bad channel options are refused with the field named", "[pubsub][history][limits]") {
  BusOptions o;
  o.channel = with_history(10, 0s);
  CHECK_THROWS_WITH(Bus(o), Catch::Contains("history_ttl"));
  o.channel = {};
  o.shards = 3;
  CHECK_THROWS_WITH(Bus(o), Catch::Contains("shards"));
}
