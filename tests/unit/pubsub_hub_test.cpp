// Hub basics on one thread, without a loop (poll() drains the inbox):
// subscribe / unsubscribe / publish, delivery order, the encoder, outcomes
// and their counters.
#include <catch2/catch.hpp>

#include "pubsub_support.h"

using namespace pubsub_test;

TEST_CASE("A publication reaches every subscriber of its channel and no one else",
          "[pubsub][hub]") {
  Bus bus;
  Hub hub(bus);
  Recorder a, b, other;
  REQUIRE_FALSE(hub.subscribe(a, "news").error);
  REQUIRE_FALSE(hub.subscribe(b, "news").error);
  REQUIRE_FALSE(hub.subscribe(other, "sport").error);

  const PublishResult r = hub.publish("news", "hello");
  REQUIRE_FALSE(r.error);
  CHECK(r.position.offset == 1);
  CHECK(r.position.epoch.size() == 8);
  CHECK(a.data.empty());  // never delivered inside publish()
  CHECK(poll_all(hub) == 1);
  CHECK(a.data == std::vector<std::string>{"hello"});
  CHECK(b.data == std::vector<std::string>{"hello"});
  CHECK(other.data.empty());
  CHECK(hub.local_subscribers("news") == 2);
  CHECK(hub.subscribed(a, "news"));
  CHECK_FALSE(hub.subscribed(a, "sport"));
}

TEST_CASE("Offsets of a channel count up by one and arrive in order", "[pubsub][hub]") {
  Bus bus;
  Hub hub(bus);
  Recorder r;
  hub.subscribe(r, "c");
  for (int i = 0; i < 10; ++i) hub.publish("c", std::to_string(i));
  hub.publish("other", "x");  // another channel has its own offsets
  poll_all(hub);
  CHECK(r.offsets == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(r.data.front() == "0");
  CHECK(r.data.back() == "9");
}

TEST_CASE("An unsubscribed subscriber gets nothing more, and the channel is freed on the hub",
          "[pubsub][hub]") {
  Bus bus;
  Hub hub(bus);
  Recorder a, b;
  hub.subscribe(a, "c");
  hub.subscribe(b, "c");
  hub.publish("c", "1");
  poll_all(hub);
  CHECK_FALSE(hub.unsubscribe(a, "c"));
  CHECK(hub.unsubscribe(a, "c") == errc::not_subscribed);
  hub.publish("c", "2");
  poll_all(hub);
  CHECK(a.data == std::vector<std::string>{"1"});
  CHECK(b.data == std::vector<std::string>{"1", "2"});
  CHECK(a.channel_count() == 0);
  CHECK(a.hub() == nullptr);
  CHECK(hub.unsubscribe_all(b) == 1);
  CHECK(hub.stats().channels == 0);
  CHECK(hub.stats().subscriptions == 0);
  CHECK_FALSE(hub.channel_stats("c"));
  CHECK(bus.stats().channels == 0);  // no history, no subscribers: nothing kept
}

TEST_CASE("A subscriber gets every publication after the position its subscribe returned",
          "[pubsub][hub]") {
  Bus bus;
  Hub hub(bus);
  Recorder early, late;
  hub.subscribe(early, "c");
  hub.publish("c", "first");
  poll_all(hub);
  hub.publish("c", "queued");  // ordered, still in this hub's inbox
  const SubscribeResult s = hub.subscribe(late, "c");
  CHECK(s.position.offset == 1);  // this hub has delivered up to offset 1
  hub.publish("c", "after");
  poll_all(hub);
  CHECK(early.data == std::vector<std::string>{"first", "queued", "after"});
  CHECK(late.offsets == std::vector<std::uint64_t>{2, 3});
}

TEST_CASE("Two hubs on one bus both deliver every publication, whoever published",
          "[pubsub][hub]") {
  Bus bus;
  Hub h1(bus), h2(bus);
  Recorder r1, r2;
  h1.subscribe(r1, "room");
  h2.subscribe(r2, "room");
  h1.publish("room", "from 1");
  h2.publish("room", "from 2");
  bus.publish("room", "from elsewhere");  // a thread with no hub
  poll_all(h1);
  poll_all(h2);
  const std::vector<std::string> want{"from 1", "from 2", "from elsewhere"};
  CHECK(r1.data == want);
  CHECK(r2.data == want);
  CHECK(r1.offsets == r2.offsets);
}

TEST_CASE("A hub without subscribers of a channel is not sent its publications", "[pubsub][hub]") {
  Bus bus;
  Hub h1(bus), h2(bus);
  Recorder r1;
  h1.subscribe(r1, "c");
  h1.publish("c", "x");
  CHECK(h2.poll() == 0);
  CHECK(h1.poll() == 1);
  CHECK(h2.stats().events == 0);
}

TEST_CASE("The encoder runs once per publication per hub and every subscriber shares its frame",
          "[pubsub][hub][encode]") {
  Bus bus;
  int encodes = 0;
  HubOptions options;
  options.encode_publication = [&](const Publication& p) {
    ++encodes;
    return std::make_shared<const std::string>("frame:" + p.data);
  };
  Hub h1(bus, options), h2(bus, options);
  std::vector<std::unique_ptr<Recorder>> rs;
  for (int i = 0; i < 5; ++i) {
    rs.push_back(std::make_unique<Recorder>());
    (i < 3 ? h1 : h2).subscribe(*rs.back(), "c");
  }
  h1.publish("c", "a");
  h1.publish("c", "b");
  poll_all(h1);
  poll_all(h2);
  CHECK(encodes == 4);  // 2 publications x 2 hubs
  CHECK(h1.stats().encodes == 2);
  for (auto& r : rs) {
    REQUIRE(r->frames.size() == 2);
    CHECK(*r->frames[0] == "frame:a");
  }
  CHECK(rs[0]->frames[0].get() == rs[1]->frames[0].get());  // the same bytes, not copies
  CHECK(rs[0]->frames[0].get() == rs[2]->frames[0].get());
  CHECK(rs[3]->frames[0].get() == rs[4]->frames[0].get());
  // Subscribers keep their references; the hub holds none after delivery.
  CHECK(rs[0]->frames[0].use_count() == 3);
}

namespace {
// Asks the hub for its second encoding of every event (another protocol's
// frame), as heartwheel-chat's Centrifugo clients do.
struct SecondProtocol : Recorder {
  DeliveryOutcome on_publication(const Publication& p, const Frame&) override {
    return Recorder::on_publication(p, hub()->frame_as(0));
  }
  DeliveryOutcome on_presence(const PresenceEvent& e, const Frame&) override {
    return Recorder::on_presence(e, hub()->frame_as(0));
  }
};
}  // namespace

TEST_CASE("A further encoding is made once per event for the subscribers that ask for it",
          "[pubsub][hub][encode]") {
  BusOptions bus_options;
  bus_options.channel.join_leave = true;
  Bus bus(bus_options);
  int first = 0, second = 0, second_presence = 0;
  HubOptions options;
  options.encode_publication = [&](const Publication& p) {
    ++first;
    return std::make_shared<const std::string>("ours:" + p.data);
  };
  options.more_encodings.push_back(
      {[&](const Publication& p) {
         ++second;
         return std::make_shared<const std::string>("theirs:" + p.data);
       },
       [&](const PresenceEvent& e) {
         ++second_presence;
         return std::make_shared<const std::string>("theirs:" + e.info);
       }});
  Hub hub(bus, options);
  Recorder ours;
  SecondProtocol a, b;
  hub.subscribe(ours, "c");
  hub.subscribe(a, "c");
  hub.subscribe(b, "c");
  poll_all(hub);
  hub.publish("c", "x");
  hub.publish("c", "y");
  poll_all(hub);
  CHECK(first == 2);
  CHECK(second == 2);  // once per publication, whatever the number of askers
  REQUIRE(a.frames.size() == 2);
  REQUIRE(b.frames.size() == 2);
  CHECK(*a.frames[1] == "theirs:y");
  CHECK(a.frames[0].get() == b.frames[0].get());  // shared, not copied
  CHECK(*ours.frames[0] == "ours:x");
  // The three joins reach everyone subscribed when the inbox is polled.
  REQUIRE(a.presence_frames.size() == 3);
  REQUIRE(b.presence_frames.size() == 3);
  CHECK(a.presence_frames[2].get() == b.presence_frames[2].get());
  CHECK(second_presence == 3);        // one per join event, shared by whoever asked
  CHECK(hub.frame_as(0) == nullptr);  // outside a fan-out
  CHECK(hub.frame_as(1) == nullptr);  // no such encoding
}

TEST_CASE("A hub with only the first encoding never runs the others", "[pubsub][hub][encode]") {
  Bus bus;
  int second = 0;
  HubOptions options;
  options.encode_publication = [](const Publication& p) {
    return std::make_shared<const std::string>(p.data);
  };
  options.more_encodings.push_back({[&](const Publication& p) {
                                      ++second;
                                      return std::make_shared<const std::string>(p.data);
                                    },
                                    {}});
  Hub hub(bus, options);
  Recorder r;
  hub.subscribe(r, "c");
  hub.publish("c", "x");
  poll_all(hub);
  CHECK(r.frames.size() == 1);
  CHECK(second == 0);
}

TEST_CASE("Without an encoder subscribers get a null frame", "[pubsub][hub][encode]") {
  Bus bus;
  Hub hub(bus);
  Recorder r;
  hub.subscribe(r, "c");
  hub.publish("c", "x");
  poll_all(hub);
  REQUIRE(r.frames.size() == 1);
  CHECK(r.frames[0] == nullptr);
}

TEST_CASE("An encoder that throws costs that publication on that hub, counted as dropped",
          "[pubsub][hub][encode]") {
  Bus bus;
  HubOptions options;
  options.encode_publication = [](const Publication& p) -> Frame {
    if (p.data == "bad") throw std::runtime_error("cannot encode");
    return std::make_shared<const std::string>(p.data);
  };
  Hub hub(bus, options);
  Recorder a, b;
  hub.subscribe(a, "c");
  hub.subscribe(b, "c");
  hub.publish("c", "bad");
  hub.publish("c", "good");
  poll_all(hub);
  CHECK(a.data == std::vector<std::string>{"good"});
  const HubStats s = hub.stats();
  CHECK(s.encode_errors == 1);
  CHECK(s.delivery.dropped == 2);
  CHECK(s.delivery.deliveries == 2);
}

TEST_CASE("Skips, slow-consumer closes, drops and throws are counted per channel and in total",
          "[pubsub][hub][stats]") {
  struct Thrower : Recorder {
    DeliveryOutcome on_publication(const Publication&, const Frame&) override {
      throw std::runtime_error("boom");
    }
  };
  Bus bus;
  Hub hub(bus);
  Recorder ok, skipper, closer, dropper;
  Thrower thrower;
  skipper.outcome = DeliveryOutcome::skipped;
  closer.outcome = DeliveryOutcome::closed;
  dropper.outcome = DeliveryOutcome::dropped;
  for (Subscriber* s :
       std::initializer_list<Subscriber*>{&ok, &skipper, &closer, &dropper, &thrower})
    hub.subscribe(*s, "c");
  hub.subscribe(ok, "quiet");
  hub.publish("c", "1");
  hub.publish("c", "2");
  poll_all(hub);

  const auto c = hub.channel_stats("c");
  REQUIRE(c);
  CHECK(c->fanned_out == 2);
  CHECK(c->deliveries == 2);
  CHECK(c->skips == 2);
  CHECK(c->slow_closes == 2);
  CHECK(c->dropped == 4);  // dropper and thrower, twice each
  CHECK(hub.channel_stats("quiet")->fanned_out == 0);
  const HubStats s = hub.stats();
  CHECK(s.delivery.skips == 2);
  CHECK(s.delivery.slow_closes == 2);
  CHECK(s.subscriber_errors == 2);
  CHECK(s.publications == 2);
  CHECK(s.subscriptions == 6);
  CHECK(s.channels == 2);
}

TEST_CASE("Hub statistics merge across hubs and print as JSON", "[pubsub][stats]") {
  Bus bus;
  Hub h1(bus), h2(bus);
  Recorder a, b;
  h1.subscribe(a, "c");
  h2.subscribe(b, "c");
  h1.publish("c", "x");
  poll_all(h1);
  poll_all(h2);
  HubStats total = h1.stats();
  total.merge(h2.stats());
  CHECK(total.hubs == 2);
  CHECK(total.subscriptions == 2);
  CHECK(total.delivery.deliveries == 2);
  CHECK(total.publications == 1);
  const std::string json = to_json(total);
  CHECK(json.find("\"deliveries\":2") != std::string::npos);
  CHECK(json.find("\"hubs\":2") != std::string::npos);
  CHECK(json.front() == '{');
  CHECK(json.back() == '}');
  const std::string bus_json = to_json(bus.stats());
  CHECK(bus_json.find("\"hubs\":2") != std::string::npos);
  CHECK(bus_json.find("\"publications\":1") != std::string::npos);
}

TEST_CASE("Destroying a subscriber unsubscribes it everywhere", "[pubsub][hub]") {
  Bus bus;
  Hub hub(bus);
  Recorder stays;
  hub.subscribe(stays, "a");
  {
    Recorder gone;
    hub.subscribe(gone, "a");
    hub.subscribe(gone, "b");
    CHECK(hub.presence("a") == 2);
  }
  CHECK(hub.presence("a") == 1);
  CHECK(hub.presence("b") == 0);
  hub.publish("a", "x");
  poll_all(hub);
  CHECK(stays.data.size() == 1);
  CHECK(hub.stats().subscriptions == 1);
}

TEST_CASE("Destroying a hub unsubscribes its subscribers and frees undelivered envelopes",
          "[pubsub][hub]") {
  Bus bus;
  Recorder r;
  {
    Hub hub(bus);
    hub.subscribe(r, "c");
    hub.publish("c", "never delivered");  // stays in the inbox: freed by the destructor
    CHECK(bus.presence("c") == 1);
  }
  CHECK(r.hub() == nullptr);
  CHECK(r.channel_count() == 0);
  CHECK(r.data.empty());
  CHECK(bus.presence("c") == 0);
  CHECK(bus.stats().hubs == 0);
}

TEST_CASE("A subscription is one node of five pointers and a subscriber adds 64 bytes",
          "[pubsub][memory]") {
  // The figures quoted in subscriber.h and the layer README.
  STATIC_REQUIRE(sizeof(heartwheel::pubsub::detail::Subscription) == 5 * sizeof(void*));
  STATIC_REQUIRE(sizeof(Subscriber) <= 64);
}

TEST_CASE("During a fan-out each next subscriber gets its prefetch hint right before its delivery",
          "[pubsub][hub]") {
  // A subscriber that logs its hint and its delivery in one shared log.
  struct Logged : Subscriber {
    Logged(std::vector<std::string>& shared, std::string who) : log(&shared), name(std::move(who)) {}
    DeliveryOutcome on_publication(const Publication&, const Frame&) override {
      log->push_back("deliver:" + name);
      return DeliveryOutcome::delivered;
    }
    void prefetch() const noexcept override { log->push_back("prefetch:" + name); }
    std::vector<std::string>* log;
    std::string name;
  };
  Bus bus;
  Hub hub(bus);
  std::vector<std::string> log;
  Logged a(log, "a"), b(log, "b"), c(log, "c");
  for (Logged* s : {&a, &b, &c}) REQUIRE_FALSE(hub.subscribe(*s, "news").error);
  REQUIRE_FALSE(hub.publish("news", "hello").error);
  REQUIRE(poll_all(hub) == 1);
  // Three deliveries, the first with no hint (nothing ran before it), each
  // later one right after its own hint.
  REQUIRE(log.size() == 5);
  CHECK(log[0].rfind("deliver:", 0) == 0);
  for (std::size_t i = 1; i < log.size(); i += 2) {
    CHECK(log[i].rfind("prefetch:", 0) == 0);
    CHECK(log[i].substr(9) == log[i + 1].substr(8));
    CHECK(log[i + 1].rfind("deliver:", 0) == 0);
  }
}
