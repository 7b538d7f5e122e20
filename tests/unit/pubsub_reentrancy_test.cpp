// Re-entrancy: what a subscriber's callback may do during a fan-out.
// Unsubscribing itself, the next one, everyone; subscribing others;
// publishing; being destroyed; polling.
#include <catch2/catch.hpp>
#include <memory>

#include "pubsub_support.h"

using namespace pubsub_test;

namespace {
// Subscribers are linked newest first: the fan-out calls them in reverse
// order of subscription. These tests subscribe in reverse so that rs[0] is
// called first.
std::vector<std::unique_ptr<Recorder>> subscribe_n(Hub& hub, std::string_view channel, int n) {
  std::vector<std::unique_ptr<Recorder>> rs;
  for (int i = 0; i < n; ++i) rs.push_back(std::make_unique<Recorder>());
  for (int i = n; i-- > 0;) hub.subscribe(*rs[static_cast<std::size_t>(i)], channel);
  return rs;
}
}  // namespace

TEST_CASE("A subscriber may unsubscribe itself during the fan-out", "[pubsub][reentrancy]") {
  Bus bus;
  Hub hub(bus);
  auto rs = subscribe_n(hub, "c", 3);
  rs[1]->on_pub = [&](const Publication&) { hub.unsubscribe(*rs[1], "c"); };
  hub.publish("c", "1");
  hub.publish("c", "2");
  poll_all(hub);
  CHECK(rs[0]->offsets == std::vector<std::uint64_t>{1, 2});
  CHECK(rs[1]->offsets == std::vector<std::uint64_t>{1});
  CHECK(rs[2]->offsets == std::vector<std::uint64_t>{1, 2});
}

TEST_CASE("A subscriber may unsubscribe the next one, which is then not called",
          "[pubsub][reentrancy]") {
  Bus bus;
  Hub hub(bus);
  auto rs = subscribe_n(hub, "c", 3);
  rs[0]->on_pub = [&](const Publication&) { hub.unsubscribe_all(*rs[1]); };
  hub.publish("c", "1");
  poll_all(hub);
  CHECK(rs[0]->offsets.size() == 1);
  CHECK(rs[1]->offsets.empty());
  CHECK(rs[2]->offsets.size() == 1);
}

TEST_CASE("When every subscriber leaves during the fan-out the channel is freed after it",
          "[pubsub][reentrancy]") {
  Bus bus;
  Hub hub(bus);
  auto rs = subscribe_n(hub, "c", 3);
  rs[0]->on_pub = [&](const Publication&) {
    for (auto& r : rs) hub.unsubscribe(*r, "c");
  };
  hub.publish("c", "1");
  hub.publish("c", "2");
  poll_all(hub);
  CHECK(rs[0]->offsets.size() == 1);
  CHECK(rs[1]->offsets.empty());
  CHECK(hub.stats().channels == 0);
  CHECK_FALSE(hub.channel_stats("c"));
  CHECK(bus.presence("c") == 0);
  CHECK(hub.stats().stale_events == 1);  // "2" found nobody
}

TEST_CASE("A subscriber destroyed in its own callback is not touched again",
          "[pubsub][reentrancy]") {
  struct SelfDestroying : Subscriber {
    DeliveryOutcome on_publication(const Publication&, const Frame&) override {
      owner->reset();  // the destructor unsubscribes; nothing of *this is used after
      return DeliveryOutcome::delivered;
    }
    std::unique_ptr<SelfDestroying>* owner = nullptr;
  };
  Bus bus;
  Hub hub(bus);
  Recorder before, after;
  auto doomed = std::make_unique<SelfDestroying>();
  doomed->owner = &doomed;
  hub.subscribe(after, "c");
  hub.subscribe(*doomed, "c");
  hub.subscribe(before, "c");  // called first: the list is newest first
  hub.publish("c", "1");
  hub.publish("c", "2");
  poll_all(hub);  // ASan / TSan: no use after free
  CHECK(doomed == nullptr);
  CHECK(before.offsets.size() == 2);
  CHECK(after.offsets.size() == 2);
  CHECK(hub.local_subscribers("c") == 2);
  CHECK(hub.stats().delivery.deliveries == 5);
}

TEST_CASE("A subscriber added during the fan-out gets the following publications, not this one",
          "[pubsub][reentrancy]") {
  Bus bus;
  Hub hub(bus);
  auto rs = subscribe_n(hub, "c", 2);
  Recorder added;
  rs[1]->on_pub = [&](const Publication& p) {
    if (p.offset == 1) {
      const SubscribeResult s = hub.subscribe(added, "c");
      CHECK(s.position.offset == 1);  // it starts after the one being delivered
    }
  };
  hub.publish("c", "1");
  hub.publish("c", "2");
  poll_all(hub);
  CHECK(added.offsets == std::vector<std::uint64_t>{2});
}

TEST_CASE("A subscriber that leaves and rejoins during the fan-out is called once",
          "[pubsub][reentrancy]") {
  Bus bus;
  Hub hub(bus);
  auto rs = subscribe_n(hub, "c", 3);
  rs[0]->on_pub = [&](const Publication& p) {
    if (p.offset != 1) return;
    hub.unsubscribe(*rs[1], "c");
    hub.subscribe(*rs[1], "c");
    for (auto& r : rs) hub.unsubscribe(*r, "c");  // the channel empties...
    // ...and fills again, mid-walk. With no history and nobody left, the
    // stream was lost in between: a new epoch, offsets from 1 again.
    const SubscribeResult again = hub.subscribe(*rs[2], "c");
    CHECK(again.position.offset == 0);
    CHECK(again.position.epoch != p.epoch);
  };
  hub.publish("c", "1");
  poll_all(hub);
  hub.publish("c", "2");
  poll_all(hub);
  CHECK(rs[0]->data == std::vector<std::string>{"1"});
  CHECK(rs[1]->data.empty());
  CHECK(rs[2]->data == std::vector<std::string>{"2"});
  CHECK(rs[2]->offsets == std::vector<std::uint64_t>{1});
  CHECK(hub.local_subscribers("c") == 1);
  CHECK(bus.presence("c") == 1);
}

TEST_CASE("A publish from a callback is delivered after the current fan-out, in order",
          "[pubsub][reentrancy]") {
  Bus bus;
  Hub hub(bus);
  auto rs = subscribe_n(hub, "c", 2);
  rs[0]->on_pub = [&](const Publication& p) {
    if (p.offset < 3) hub.publish("c", "echo of " + p.data);
    CHECK(hub.poll() == 0);  // no nested drain
  };
  hub.publish("c", "1");
  poll_all(hub);
  CHECK(rs[1]->data == std::vector<std::string>{"1", "echo of 1", "echo of echo of 1"});
  CHECK(rs[1]->offsets == std::vector<std::uint64_t>{1, 2, 3});
}

TEST_CASE("A callback may unsubscribe its subscriber from other channels", "[pubsub][reentrancy]") {
  Bus bus;
  Hub hub(bus);
  Recorder r, other;
  hub.subscribe(r, "a");
  hub.subscribe(r, "b");
  hub.subscribe(other, "b");
  r.on_pub = [&](const Publication& p) {
    if (p.channel == "a") hub.unsubscribe_all(r);
  };
  hub.publish("a", "x");
  hub.publish("b", "y");
  poll_all(hub);
  CHECK(r.data == std::vector<std::string>{"x"});
  CHECK(other.data == std::vector<std::string>{"y"});
}
