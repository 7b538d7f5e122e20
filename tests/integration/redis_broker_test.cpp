// pubsub::RedisBroker against a real redis-server the test starts on a free
// port and stops by PID (OneRedis), and the same cases against a real Redis
// Cluster of six processes (Cluster: sharded pub/sub, keys over three
// masters): two brokers stand for two nodes. Hubs run without a loop, polled
// by the test thread (their answers and events arrive through their inboxes
// from the brokers' threads).
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/pubsub_redis/redis_broker.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <heartwheel/redis/slot.h>

#include "redis_server.h"

namespace {

namespace pubsub = heartwheel::pubsub;
using namespace std::chrono_literals;

struct Recorder final : pubsub::Subscriber {
  std::vector<pubsub::PublicationPtr> got;
  std::vector<pubsub::Frame> frames;
  std::vector<std::uint64_t> presence_counts;
  pubsub::DeliveryOutcome on_publication(const pubsub::Publication& p,
                                         const pubsub::Frame& f) override {
    got.push_back(std::make_shared<pubsub::Publication>(p));
    frames.push_back(f);
    return pubsub::DeliveryOutcome::delivered;
  }
  pubsub::DeliveryOutcome on_presence(const pubsub::PresenceEvent& e,
                                      const pubsub::Frame&) override {
    presence_counts.push_back(e.subscribers);
    return pubsub::DeliveryOutcome::delivered;
  }
  ~Recorder() override = default;
};

pubsub::RedisBrokerOptions common_options(std::string node) {
  pubsub::RedisBrokerOptions o;
  o.redis.connector.backoff_initial = 20ms;
  o.redis.connector.backoff_max = 200ms;
  o.redis.command_timeout = 3s;
  o.channel.history_size = 1000;
  o.channel.history_ttl = std::chrono::minutes(1);
  o.node_id = std::move(node);
  return o;
}

pubsub::RedisBrokerOptions options_for(const hwtest::RedisServer& redis, std::string node = {}) {
  auto o = common_options(std::move(node));
  o.redis.connector.port = redis.port();
  return o;
}

// The two backends the templated cases run on.
struct OneRedis {
  hwtest::RedisServer redis;
  pubsub::RedisBrokerOptions options(std::string node) { return options_for(redis, node); }
  // Subscribers of a Redis pub/sub channel.
  std::int64_t listeners(const std::string& channel) {
    return redis.command({"PUBSUB", "NUMSUB", channel})[1].integer();
  }
};

struct Cluster {
  hwtest::RedisCluster cluster;
  pubsub::RedisBrokerOptions options(std::string node) {
    auto o = common_options(std::move(node));
    o.redis.cluster.seeds = cluster.seeds();
    return o;
  }
  std::int64_t listeners(const std::string& channel) {
    const int port = cluster.master_of(heartwheel::redis::key_slot(channel));
    return cluster.command(port, {"PUBSUB", "SHARDNUMSUB", channel})[1].integer();
  }
};

// Polls `hubs` until `done()` or `limit` (then FAILs with `what`).
void wait_for(std::initializer_list<pubsub::Hub*> hubs, const std::function<bool()>& done,
              const char* what, heartwheel::Duration limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    for (auto* h : hubs) h->poll();
    if (std::chrono::steady_clock::now() > until) FAIL("timed out waiting for " << what);
    std::this_thread::sleep_for(1ms);
  }
}

pubsub::SubscribeResult subscribe(pubsub::Hub& hub, Recorder& r, const std::string& channel,
                                  std::optional<pubsub::StreamPosition> since = {}) {
  std::optional<pubsub::SubscribeResult> result;
  hub.subscribe(r, channel, {.since = since}, [&](pubsub::SubscribeResult x) { result = x; });
  wait_for(
      {&hub}, [&] { return result.has_value(); }, "the subscribe answer");
  return *result;
}

pubsub::PublishResult publish(pubsub::Hub& hub, const std::string& channel, std::string data) {
  std::optional<pubsub::PublishResult> result;
  hub.publish(channel, std::move(data), {}, [&](pubsub::PublishResult x) { result = x; });
  wait_for(
      {&hub}, [&] { return result.has_value(); }, "the publish answer");
  return *result;
}

std::uint64_t presence(pubsub::Hub& hub, const std::string& channel) {
  std::optional<pubsub::PresenceResult> result;
  hub.presence(channel, [&](pubsub::PresenceResult x) { result = x; });
  wait_for(
      {&hub}, [&] { return result.has_value(); }, "the presence answer");
  REQUIRE_FALSE(result->error);
  return result->subscribers;
}

void check_consecutive(const std::vector<pubsub::PublicationPtr>& got, std::uint64_t first) {
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i]->offset == first + i);
}

}  // namespace

TEMPLATE_TEST_CASE(
    "a publication on one node reaches a subscriber on another node once and in order",
    "[redis][broker]", OneRedis, Cluster) {
  TestType redis;
  pubsub::RedisBroker a(redis.options("a")), b(redis.options("b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub;
  const auto s = subscribe(hub_b, sub, "room");
  REQUIRE_FALSE(s.error);
  CHECK(s.position.offset == 0);
  CHECK(s.position.epoch.size() == 8);
  CHECK(s.subscribers == 1);
  for (int i = 1; i <= 200; ++i) {
    std::optional<pubsub::PublishResult> r;
    hub_a.publish("room", "m" + std::to_string(i), {},
                  [](pubsub::PublishResult x) { REQUIRE_FALSE(x.error); });
  }
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() >= 200; }, "200 publications");
  hub_a.poll();
  hub_b.poll();
  REQUIRE(sub.got.size() == 200);
  check_consecutive(sub.got, 1);
  CHECK(sub.got.back()->data == "m200");
  CHECK(sub.got.front()->epoch == s.position.epoch);
  const auto st = b.stats();
  CHECK(st.channels == 1);
  CHECK(st.posted == 200);
  CHECK(st.lost == 0);
  // Node b listens to the channel in Redis only while it has subscribers.
  CHECK(b.redis_channel("room").find("hw:ch:{") == 0);
  auto listeners = [&] { return redis.listeners(b.redis_channel("room")); };
  CHECK(listeners() == 1);
  REQUIRE(hub_b.unsubscribe(sub, "room") == std::error_code());
  wait_for(
      {&hub_a, &hub_b}, [&] { return listeners() == 0; }, "node b to unsubscribe in Redis");
  CHECK(b.stats().channels == 0);
}

TEMPLATE_TEST_CASE(
    "a publish retried with its idempotency key on another node is answered with the first's "
    "offset and delivered once",
    "[redis][broker][idempotency]", OneRedis, Cluster) {
  TestType redis;
  pubsub::RedisBroker a(redis.options("a")), b(redis.options("b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub;
  REQUIRE_FALSE(subscribe(hub_b, sub, "orders").error);
  const auto keyed_publish = [&](pubsub::Hub& hub, const std::string& channel, std::string data,
                                 const std::string& key) {
    pubsub::PublishOptions once;
    once.idempotency_key = key;
    std::optional<pubsub::PublishResult> result;
    hub.publish(channel, std::move(data), {}, once, [&](pubsub::PublishResult x) { result = x; });
    wait_for(
        {&hub_a, &hub_b}, [&] { return result.has_value(); }, "the publish answer");
    REQUIRE_FALSE(result->error);
    return *result;
  };
  const auto first = keyed_publish(hub_a, "orders", "paid", "order-7");
  CHECK_FALSE(first.duplicate);
  CHECK(first.position.offset == 1);
  const auto retry = keyed_publish(hub_b, "orders", "paid (retry)", "order-7");
  CHECK(retry.duplicate);
  CHECK(retry.position == first.position);
  // Another key, and the same key on another channel, publish.
  CHECK(keyed_publish(hub_a, "orders", "shipped", "order-8").position.offset == 2);
  CHECK_FALSE(keyed_publish(hub_a, "refunds", "none", "order-7").duplicate);
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() >= 2; }, "two publications");
  publish(hub_a, "orders", "after");  // a marker: nothing else is on its way
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() >= 3; }, "the marker");
  REQUIRE(sub.got.size() == 3);
  CHECK(sub.got[0]->data == "paid");
  CHECK(sub.got[1]->data == "shipped");
  CHECK(sub.got[2]->offset == 3);
  CHECK(b.stats().duplicates_refused == 1);
}

TEMPLATE_TEST_CASE("each publication from Redis is encoded once per node for all its hubs",
                   "[redis][broker]", OneRedis, Cluster) {
  TestType redis;
  std::atomic<int> node_encodes{0}, hub_encodes{0};
  auto o = redis.options("a");
  o.encode_publication = [&](const pubsub::Publication& p) {
    ++node_encodes;
    return std::make_shared<const std::string>("frame:" + p.data);
  };
  pubsub::RedisBroker a(o);
  pubsub::HubOptions ho;
  ho.encode_publication = [&](const pubsub::Publication&) {
    ++hub_encodes;
    return std::make_shared<const std::string>("hub");
  };
  pubsub::Hub one(a, ho), two(a, ho);
  Recorder x, y, z;
  REQUIRE_FALSE(subscribe(one, x, "e").error);
  REQUIRE_FALSE(subscribe(one, y, "e").error);
  std::optional<pubsub::SubscribeResult> zr;
  two.subscribe(z, "e", {}, [&](pubsub::SubscribeResult r) { zr = r; });
  wait_for(
      {&one, &two}, [&] { return zr.has_value(); }, "z's answer");
  for (int i = 0; i < 10; ++i) one.publish("e", std::to_string(i), {}, {});
  wait_for(
      {&one, &two}, [&] { return z.frames.size() == 10 && x.frames.size() == 10; },
      "10 publications on both hubs");
  CHECK(node_encodes == 10);
  CHECK(hub_encodes == 0);
  CHECK(*x.frames[3] == "frame:3");
  CHECK(x.frames[3].get() == z.frames[3].get());  // the very same bytes on both hubs
}

TEMPLATE_TEST_CASE(
    "a subscriber recovers on another node with no gap and no overlap while publishing goes on",
    "[redis][broker]", OneRedis, Cluster) {
  TestType redis;
  pubsub::RedisBroker a(redis.options("a")), b(redis.options("b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder first, watcher;
  REQUIRE_FALSE(subscribe(hub_a, first, "c").error);
  REQUIRE_FALSE(subscribe(hub_b, watcher, "c").error);  // node b is already listening
  int published = 0;
  auto publish_some = [&](int n) {
    for (int i = 0; i < n; ++i) hub_a.publish("c", "x" + std::to_string(++published), {}, {});
  };
  publish_some(30);
  wait_for(
      {&hub_a, &hub_b}, [&] { return first.got.size() >= 30; }, "the first 30");
  REQUIRE(hub_a.unsubscribe(first, "c") == std::error_code());
  const pubsub::StreamPosition seen{first.got.back()->offset, first.got.back()->epoch};
  publish_some(40);  // missed by `first`
  // It comes back on node b while publications keep coming.
  Recorder again;
  std::optional<pubsub::SubscribeResult> result;
  hub_b.subscribe(again, "c", {.since = seen}, [&](pubsub::SubscribeResult x) { result = x; });
  publish_some(30);
  wait_for(
      {&hub_a, &hub_b}, [&] { return result.has_value(); }, "the recovery answer");
  publish_some(20);
  wait_for(
      {&hub_a, &hub_b}, [&] { return watcher.got.size() >= 120; }, "all 120 on node b");
  wait_for(
      {&hub_a, &hub_b}, [&] { return !again.got.empty() && again.got.back()->offset == 120; },
      "the last one live");
  REQUIRE_FALSE(result->error);
  CHECK(result->recovered);
  std::vector<pubsub::PublicationPtr> all = result->publications;
  all.insert(all.end(), again.got.begin(), again.got.end());
  REQUIRE(all.size() == 120 - seen.offset);
  check_consecutive(all, seen.offset + 1);
  check_consecutive(watcher.got, 1);
}

TEMPLATE_TEST_CASE("recovery from another epoch or from trimmed history answers recovered false",
                   "[redis][broker]", OneRedis, Cluster) {
  TestType redis;
  auto small = redis.options("a");
  small.channel.history_size = 5;
  pubsub::RedisBroker a(small);
  pubsub::Hub hub(a);
  std::string epoch;
  for (int i = 0; i < 300; ++i) epoch = publish(hub, "t", "d").position.epoch;
  Recorder r1, r2, r3;
  const auto wrong_epoch = subscribe(hub, r1, "t", pubsub::StreamPosition{290, "deadbeef"});
  CHECK_FALSE(wrong_epoch.recovered);
  CHECK(wrong_epoch.publications.empty());
  const auto trimmed = subscribe(hub, r2, "t", pubsub::StreamPosition{1, epoch});
  CHECK_FALSE(trimmed.recovered);
  const auto recent = subscribe(hub, r3, "t", pubsub::StreamPosition{298, epoch});
  CHECK(recent.recovered);
  REQUIRE(recent.publications.size() == 2);
  CHECK(recent.publications[0]->offset == 299);
  CHECK(recent.position.offset == 300);
}

TEMPLATE_TEST_CASE(
    "presence counts subscribers over nodes and a halted node vanishes within the lease",
    "[redis][broker][presence]", OneRedis, Cluster) {
  TestType redis;
  auto oa = redis.options("a"), ob = redis.options("b");
  oa.presence_ttl = ob.presence_ttl = 1500ms;
  oa.channel.join_leave = ob.channel.join_leave = true;
  pubsub::RedisBroker a(oa), b(ob);
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder x, y, z;
  REQUIRE(subscribe(hub_a, x, "p").subscribers == 1);
  REQUIRE(subscribe(hub_a, y, "p").subscribers == 2);
  REQUIRE(subscribe(hub_b, z, "p").subscribers == 3);
  CHECK(presence(hub_b, "p") == 3);
  // Join events across nodes: z (on b) sees its own join with the total.
  wait_for(
      {&hub_a, &hub_b}, [&] { return !z.presence_counts.empty(); }, "z's join event");
  CHECK(z.presence_counts.back() == 3);
  // Leases are renewed: still there after several lease periods.
  const auto until = std::chrono::steady_clock::now() + 3200ms;
  while (std::chrono::steady_clock::now() < until) {
    hub_a.poll();
    hub_b.poll();
    std::this_thread::sleep_for(5ms);
  }
  CHECK(presence(hub_b, "p") == 3);
  // Node a dies without leaving: its two subscribers vanish within the TTL.
  a.halt();
  const auto halted = std::chrono::steady_clock::now();
  wait_for(
      {&hub_a, &hub_b}, [&] { return presence(hub_b, "p") == 1; }, "node a's entry to expire", 5s);
  CHECK(std::chrono::steady_clock::now() - halted < 1500ms + 2s);
}

TEST_CASE("after a Redis restart the nodes reconnect and deliveries resume in a new epoch",
          "[redis][broker][restart]") {
  hwtest::RedisServer redis;
  pubsub::RedisBroker a(options_for(redis, "a")), b(options_for(redis, "b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub;
  const auto s = subscribe(hub_b, sub, "r");
  REQUIRE_FALSE(publish(hub_a, "r", "before").error);
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() == 1; }, "the first publication");
  redis.kill();
  // (A publish sent before node a sees the connection drop would fail with
  // unavailable: it may or may not have run. Wait until it knows.)
  wait_for(
      {&hub_a, &hub_b}, [&] { return a.stats().link.connected == 0; }, "node a to notice");
  // While Redis is down a publish waits in the link's buffer (up to the
  // command timeout, 3 s here) ...
  std::optional<pubsub::PublishResult> during;
  const auto publishes = a.stats().publishes;
  hub_a.publish("r", "during", {}, [&](pubsub::PublishResult x) { during = x; });
  wait_for(
      {&hub_a, &hub_b},
      [&] { return a.stats().publishes == publishes + 1 && a.stats().link.buffered >= 1; },
      "the publish to wait in the link's buffer");
  hub_a.poll();
  CHECK_FALSE(during.has_value());
  redis.restart();
  // ... and is taken when it comes back (a new stream: Redis kept nothing).
  wait_for(
      {&hub_a, &hub_b}, [&] { return during.has_value(); }, "the buffered publish");
  REQUIRE_FALSE(during->error);
  CHECK(during->position.offset == 1);
  CHECK(during->position.epoch != s.position.epoch);
  REQUIRE_FALSE(publish(hub_a, "r", "after").error);
  wait_for(
      {&hub_a, &hub_b}, [&] { return !sub.got.empty() && sub.got.back()->data == "after"; },
      "deliveries after the restart");
  // Node b got the new stream from its start, in order, in the new epoch.
  REQUIRE(sub.got.size() == 3);
  CHECK(sub.got[1]->data == "during");
  CHECK(sub.got[1]->offset == 1);
  CHECK(sub.got[2]->offset == 2);
  CHECK(sub.got[2]->epoch == during->position.epoch);
  const auto st = b.stats();
  CHECK(st.link.resubscribe_rounds >= 1);
  CHECK(st.epoch_changes == 1);
}

TEST_CASE("a publish or a join while Redis is down and stays down answers unavailable",
          "[redis][broker][restart]") {
  hwtest::RedisServer redis;
  auto o = options_for(redis, "a");
  o.redis.command_timeout = 300ms;
  pubsub::RedisBroker a(o);
  pubsub::Hub hub(a);
  REQUIRE_FALSE(publish(hub, "u", "one").error);
  redis.kill();
  const auto r = publish(hub, "u", "two");
  CHECK(r.error == pubsub::errc::unavailable);
  CHECK(a.stats().publish_errors == 1);
  // A join cannot be confirmed either: it answers unavailable, changes
  // nothing, and the node does not keep the channel.
  Recorder s;
  const auto joined = subscribe(hub, s, "new-channel");
  CHECK(joined.error == pubsub::errc::unavailable);
  CHECK_FALSE(hub.subscribed(s, "new-channel"));
  CHECK(hub.local_subscribers("new-channel") == 0);
  CHECK(a.stats().channels == 0);
}

TEMPLATE_TEST_CASE(
    "a subscription cancelled before the broker answers gets its answer and nothing more",
    "[redis][broker][pending]", OneRedis, Cluster) {
  TestType redis;
  pubsub::RedisBroker a(redis.options("a"));
  pubsub::Hub hub(a);
  // The value-returning forms need a broker that answers at once.
  Recorder r;
  CHECK_THROWS_AS(hub.subscribe(r, "c"), std::logic_error);
  CHECK_THROWS_AS(hub.publish("c", "x"), std::logic_error);

  Recorder watcher;
  REQUIRE_FALSE(subscribe(hub, watcher, "c").error);
  std::optional<pubsub::SubscribeResult> answer;
  hub.subscribe(r, "c", {}, [&](pubsub::SubscribeResult x) { answer = x; });
  CHECK(hub.subscribed(r, "c"));  // pending counts
  std::optional<pubsub::SubscribeResult> twice;
  hub.subscribe(r, "c", {}, [&](pubsub::SubscribeResult x) { twice = x; });
  REQUIRE(twice.has_value());  // found here: answered inside the call
  CHECK(twice->error == pubsub::errc::already_subscribed);
  CHECK(hub.unsubscribe(r, "c") == std::error_code());
  CHECK_FALSE(hub.subscribed(r, "c"));
  {
    Recorder gone;  // destroyed while its join is pending
    hub.subscribe(gone, "c", {}, {});
  }
  wait_for(
      {&hub}, [&] { return answer.has_value(); }, "the cancelled join's answer");
  CHECK_FALSE(answer->error);
  REQUIRE_FALSE(publish(hub, "c", "after").error);
  wait_for(
      {&hub}, [&] { return watcher.got.size() == 1; }, "the publication");
  CHECK(r.got.empty());
  CHECK(hub.local_subscribers("c") == 1);
  // Both undone joins were left again: only the watcher is present.
  wait_for(
      {&hub}, [&] { return presence(hub, "c") == 1; }, "presence 1");
}

TEST_CASE("publications on 200 channels over every master reach subscribers on another node",
          "[redis][broker][cluster]") {
  Cluster redis;
  pubsub::RedisBroker a(redis.options("a")), b(redis.options("b"));
  pubsub::Hub hub_a(a), hub_b(b);
  std::vector<Recorder> subs(200);
  std::vector<std::string> channels;
  std::size_t answered = 0;
  for (int i = 0; i < 200; ++i) {
    channels.push_back("room-" + std::to_string(i));
    hub_b.subscribe(subs[static_cast<std::size_t>(i)], channels.back(), {},
                    [&](pubsub::SubscribeResult r) {
                      REQUIRE_FALSE(r.error);
                      ++answered;
                    });
  }
  wait_for({&hub_a, &hub_b}, [&] { return answered == 200; }, "200 joins", 30s);
  for (const auto& c : channels) hub_a.publish(c, "to " + c, {}, {});
  wait_for(
      {&hub_a, &hub_b},
      [&] {
        return std::all_of(subs.begin(), subs.end(), [](const Recorder& r) { return !r.got.empty(); });
      },
      "one publication on each channel", 30s);
  for (std::size_t i = 0; i < 200; ++i) {
    REQUIRE(subs[i].got.size() == 1);
    CHECK(subs[i].got[0]->data == "to " + channels[i]);
    CHECK(subs[i].got[0]->offset == 1);
  }
  // Node b's channels are spread over the three masters (128 partitions).
  const auto st = b.stats();
  REQUIRE(st.subscriber_masters.size() == 3);
  for (const auto& m : st.subscriber_masters) CHECK(m.pending > 30);
  CHECK(a.stats().masters.size() == 3);
  CHECK(st.lost == 0);
}

TEST_CASE("after a master is killed publishing resumes and every acknowledged publication arrives",
          "[redis][broker][cluster][failover]") {
  Cluster redis;
  auto oa = redis.options("a"), ob = redis.options("b");
  oa.redis.wait_replicas = 1;  // acknowledged = on the replica too
  oa.redis.wait_timeout = 500ms;
  oa.redis.command_timeout = ob.redis.command_timeout = 2s;
  pubsub::RedisBroker a(oa), b(ob);
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub;
  REQUIRE_FALSE(subscribe(hub_b, sub, "f").error);
  const int victim = redis.cluster.master_of(heartwheel::redis::key_slot(b.redis_channel("f")));

  // One publish every 10 ms. The master of "f" dies after 300 ms; once its
  // replica has taken over, the old master comes back as the new one's
  // replica (until then WAIT finds no replica: publishes are not
  // acknowledged, they answer unavailable).
  using Clock = std::chrono::steady_clock;
  std::vector<std::string> acked;
  int sent = 0, failed = 0;
  const auto start = Clock::now();
  auto next = start;
  bool killed = false, restarted = false;
  std::size_t acked_at_restart = 0;
  while (Clock::now() - start < 60s) {
    if (Clock::now() >= next) {
      const std::string data = "m" + std::to_string(++sent);
      hub_a.publish("f", data, {}, [&, data](pubsub::PublishResult r) {
        if (r.error)
          ++failed;
        else
          acked.push_back(data);
      });
      next += 10ms;
    }
    if (!killed && Clock::now() - start > 300ms) {
      redis.cluster.kill(victim);
      killed = true;
    }
    if (killed && !restarted && a.stats().link.failovers > 0) {
      redis.cluster.restart(victim);
      restarted = true;
      acked_at_restart = acked.size();
    }
    hub_a.poll();
    hub_b.poll();
    if (restarted && acked.size() >= acked_at_restart + 50) break;
    std::this_thread::sleep_for(1ms);
  }
  INFO("sent " << sent << ", acknowledged " << acked.size() << ", failed " << failed);
  REQUIRE(restarted);
  REQUIRE(acked.size() >= acked_at_restart + 50);
  // Everything acknowledged reaches the subscriber on node b (live, or from
  // the stream for what it missed during the failover).
  auto has = [&](const std::string& d) {
    return std::any_of(sub.got.begin(), sub.got.end(),
                       [&](const pubsub::PublicationPtr& p) { return p->data == d; });
  };
  wait_for(
      {&hub_a, &hub_b}, [&] { return std::all_of(acked.begin(), acked.end(), has); },
      "every acknowledged publication on node b", 15s);
  // In order: offsets rise by one within an epoch.
  for (std::size_t i = 1; i < sub.got.size(); ++i)
    if (sub.got[i]->epoch == sub.got[i - 1]->epoch)
      CHECK(sub.got[i]->offset == sub.got[i - 1]->offset + 1);
  const auto st = a.stats();
  CHECK(st.link.failovers >= 1);
  CHECK(st.link.waits > 0);
  // Node b only subscribes, but its subscriber held "f" on the victim: a
  // link that had a connection to the master that failed counts the
  // failover, whether or not the victim came back (as a replica, which takes
  // SSUBSCRIBE) before a map read showed the promotion (redis README, "What
  // `failovers` counts"). It is counted when the restarted victim's
  // connection is back, which may be after everything arrived.
  wait_for(
      {&hub_a, &hub_b}, [&] { return b.stats().link.failovers >= 1; }, "b counting the failover");
  CHECK(b.stats().subscriber_masters.size() == 3);
  for (const auto& m : b.stats().subscriber_masters)
    CHECK(m.address != "127.0.0.1:" + std::to_string(victim));
}

namespace {

// What a failover to a replica that lagged leaves of channel `c`: its top
// and stream cut back from `top` to `kept` in the same epoch (as on the old
// master before offsets kept + 1 .. top; the stream's last id too, as on
// that replica).
// The prefix of channel `c`'s Redis keys ("hw:{T}C"; its stream is
// prefix + ":s", its meta hash prefix + ":m"), from its pub/sub channel
// (hw:ch:{T}C).
std::string channel_keys(const pubsub::RedisBroker& node, const std::string& c) {
  return "hw:" + node.redis_channel(c).substr(std::string("hw:ch:").size());
}

void cut_back(hwtest::RedisServer& redis, const pubsub::RedisBroker& node, const std::string& c,
              std::uint64_t kept, std::uint64_t top) {
  const std::string keys = channel_keys(node, c);
  for (std::uint64_t o = kept + 1; o <= top; ++o)
    redis.command({"XDEL", keys + ":s", std::to_string(o) + "-0"});
  redis.command({"XSETID", keys + ":s", std::to_string(kept) + "-0"});
  redis.command({"HSET", keys + ":m", "s", std::to_string(kept)});
}

pubsub::HistoryResult history(pubsub::Hub& hub, const std::string& channel) {
  std::optional<pubsub::HistoryResult> result;
  hub.history(channel, 100, [&](pubsub::HistoryResult x) { result = x; });
  wait_for(
      {&hub}, [&] { return result.has_value(); }, "the history answer");
  REQUIRE_FALSE(result->error);
  return *result;
}

std::vector<std::string> data_of(const std::vector<pubsub::PublicationPtr>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p->data);
  return out;
}

}  // namespace

TEST_CASE(
    "a stream that went back in a failover gets a new epoch that keeps its history and delivers "
    "none of it again",
    "[redis][broker][rewind]") {
  hwtest::RedisServer redis;
  pubsub::RedisBroker a(options_for(redis, "a")), b(options_for(redis, "b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub;
  REQUIRE_FALSE(subscribe(hub_b, sub, "w").error);
  std::string old_epoch;
  for (int i = 1; i <= 10; ++i) old_epoch = publish(hub_a, "w", "m" + std::to_string(i)).position.epoch;
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() == 10; }, "the first 10 on node b");
  // The new master has 1..7 and takes one more publication: offset 8 again,
  // a duplicate for node b, which delivered the old 8.
  cut_back(redis, b, "w", 7, 10);
  const auto eighth = publish(hub_a, "w", "n8");
  REQUIRE_FALSE(eighth.error);
  CHECK(eighth.position.offset == 8);
  CHECK(eighth.position.epoch == old_epoch);
  // A join on node b reads the channel: its top went back (8 < 10).
  Recorder late;
  const auto joined = subscribe(hub_b, late, "w");
  REQUIRE_FALSE(joined.error);
  const std::string new_epoch = joined.position.epoch;
  CHECK(new_epoch != old_epoch);
  CHECK(joined.position.offset == 8);  // the epoch starts at the surviving top
  const auto after = publish(hub_a, "w", "after");
  REQUIRE_FALSE(after.error);
  CHECK(after.position.offset == 9);
  CHECK(after.position.epoch == new_epoch);
  wait_for(
      {&hub_a, &hub_b}, [&] { return !late.got.empty() && sub.got.size() >= 11; },
      "the publication after the rewind");
  hub_b.poll();
  // Live subscribers: nothing delivered again, the next one after the base.
  REQUIRE(sub.got.size() == 11);
  CHECK(sub.got[10]->offset == 9);
  CHECK(sub.got[10]->epoch == new_epoch);
  CHECK(sub.got[10]->data == "after");
  REQUIRE(late.got.size() == 1);
  CHECK(late.got[0]->offset == 9);
  // History holds everything that survived, in the new epoch.
  const auto h = history(hub_b, "w");
  CHECK(h.position.offset == 9);
  CHECK(h.position.epoch == new_epoch);
  CHECK(data_of(h.publications) ==
        std::vector<std::string>{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "n8", "after"});
  for (const auto& p : h.publications) CHECK(p->epoch == new_epoch);
  check_consecutive(h.publications, 1);
  // Recovery: from the old epoch the client must reload; within the new
  // one it reaches back over the base (a node joining afterwards).
  pubsub::RedisBroker c(options_for(redis, "c"));
  pubsub::Hub hub_c(c);
  Recorder from_old, from_new;
  CHECK_FALSE(subscribe(hub_c, from_old, "w", pubsub::StreamPosition{10, old_epoch}).recovered);
  const auto recovered = subscribe(hub_c, from_new, "w", pubsub::StreamPosition{5, new_epoch});
  CHECK(recovered.recovered);
  CHECK(data_of(recovered.publications) == std::vector<std::string>{"m6", "m7", "n8", "after"});
  // The kept stream lives on with the channel's TTL.
  const std::string keys = channel_keys(b, "w");
  CHECK(redis.command({"PTTL", keys + ":s"}).integer() > 0);
  const auto st = b.stats();
  CHECK(st.rewinds == 1);
  CHECK(st.epoch_changes == 1);
  CHECK(st.lost == 0);
}

TEST_CASE("two nodes that both find the stream went back make one new epoch and keep its history",
          "[redis][broker][rewind]") {
  hwtest::RedisServer redis;
  pubsub::RedisBroker a(options_for(redis, "a")), b(options_for(redis, "b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub_a, sub_b;
  REQUIRE_FALSE(subscribe(hub_a, sub_a, "v").error);
  REQUIRE_FALSE(subscribe(hub_b, sub_b, "v").error);
  for (int i = 1; i <= 10; ++i) REQUIRE_FALSE(publish(hub_a, "v", "m" + std::to_string(i)).error);
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub_a.got.size() == 10 && sub_b.got.size() == 10; },
      "the first 10 on both nodes");
  cut_back(redis, b, "v", 6, 10);
  // Both nodes read the channel at once: each finds the top behind.
  Recorder late_a, late_b;
  std::optional<pubsub::SubscribeResult> ra, rb;
  hub_a.subscribe(late_a, "v", {}, [&](pubsub::SubscribeResult x) { ra = x; });
  hub_b.subscribe(late_b, "v", {}, [&](pubsub::SubscribeResult x) { rb = x; });
  wait_for(
      {&hub_a, &hub_b}, [&] { return ra.has_value() && rb.has_value(); }, "both joins");
  REQUIRE_FALSE(ra->error);
  REQUIRE_FALSE(rb->error);
  CHECK(ra->position.epoch == rb->position.epoch);  // one reset won
  CHECK(ra->position.offset == 6);
  CHECK(rb->position.offset == 6);
  REQUIRE_FALSE(publish(hub_a, "v", "after").error);
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub_a.got.size() >= 11 && sub_b.got.size() >= 11; },
      "the publication after the rewind on both nodes");
  hub_a.poll();
  hub_b.poll();
  for (auto* s : {&sub_a, &sub_b}) {
    REQUIRE(s->got.size() == 11);
    CHECK(s->got[10]->offset == 7);
    CHECK(s->got[10]->epoch == ra->position.epoch);
  }
  CHECK(data_of(history(hub_b, "v").publications) ==
        std::vector<std::string>{"m1", "m2", "m3", "m4", "m5", "m6", "after"});
  const auto sa = a.stats(), sb = b.stats();
  CHECK(sa.rewinds + sb.rewinds >= 1);
  CHECK(sa.epoch_changes == 1);
  CHECK(sb.epoch_changes == 1);
  CHECK(sa.lost + sb.lost == 0);
}

TEST_CASE("a node that had not delivered up to the base of the new epoch fills the rest from the "
          "kept stream",
          "[redis][broker][rewind]") {
  hwtest::RedisServer redis;
  pubsub::RedisBroker a(options_for(redis, "a")), b(options_for(redis, "b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub_a, sub_b;
  REQUIRE_FALSE(subscribe(hub_a, sub_a, "u").error);
  REQUIRE_FALSE(subscribe(hub_b, sub_b, "u").error);
  std::string old_epoch;
  for (int i = 1; i <= 5; ++i) old_epoch = publish(hub_a, "u", "m" + std::to_string(i)).position.epoch;
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub_a.got.size() == 5 && sub_b.got.size() == 5; },
      "the first 5 on both nodes");
  // 6..10 reach the stream without a live message; node a reads them (a
  // join's round), node b stays at 5.
  const std::string keys = channel_keys(b, "u");
  for (int o = 6; o <= 10; ++o)
    redis.command({"XADD", keys + ":s", std::to_string(o) + "-0", "d", "m" + std::to_string(o),
                   "i", ""});
  redis.command({"HSET", keys + ":m", "s", "10"});
  Recorder reader;
  REQUIRE_FALSE(subscribe(hub_a, reader, "u").error);
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub_a.got.size() == 10; }, "6..10 on node a");
  // The failover keeps 1..8; node a (at 10) resets, node b (at 5) does not
  // notice until the next publication, in the new epoch.
  cut_back(redis, b, "u", 8, 10);
  Recorder late;
  const auto joined = subscribe(hub_a, late, "u");
  REQUIRE_FALSE(joined.error);
  CHECK(joined.position.epoch != old_epoch);
  CHECK(joined.position.offset == 8);
  REQUIRE_FALSE(publish(hub_a, "u", "after").error);
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub_b.got.size() >= 9 && sub_a.got.size() >= 11; },
      "the rest on node b");
  hub_a.poll();
  hub_b.poll();
  REQUIRE(sub_b.got.size() == 9);
  check_consecutive(sub_b.got, 1);
  CHECK(data_of({sub_b.got.begin() + 5, sub_b.got.end()}) ==
        std::vector<std::string>{"m6", "m7", "m8", "after"});
  for (std::size_t i = 5; i < 9; ++i) CHECK(sub_b.got[i]->epoch == joined.position.epoch);
  REQUIRE(sub_a.got.size() == 11);
  CHECK(sub_a.got[10]->offset == 9);
  CHECK(b.stats().lost == 0);
  CHECK(b.stats().epoch_changes == 1);
  CHECK(b.stats().rewinds == 0);
}

TEST_CASE(
    "a publication the stream does not hold, delivered at an offset the stream gave another, "
    "makes a new epoch at the next read",
    "[redis][broker][rewind]") {
  // A Redis Cluster master cut off during a failover runs the publishes
  // queued behind its WAITs and sends their messages to a node that is cut
  // off too; the new master gives those offsets to other publications
  // meanwhile. After the heal the node's old connection delivers the old
  // master's messages: offsets the stream holds with other publications
  // (found by tools/faults --scenario cluster-failover-partition). The
  // node's next read must see that the entry at its top is not the one it
  // delivered, and make a new epoch (its subscribers reload), not go on
  // silently without the stream's publications at those offsets.
  hwtest::RedisServer redis;
  pubsub::RedisBroker a(options_for(redis, "a")), b(options_for(redis, "b"));
  pubsub::Hub hub_a(a), hub_b(b);
  Recorder sub;
  REQUIRE_FALSE(subscribe(hub_b, sub, "t").error);
  std::string old_epoch;
  for (int i = 1; i <= 5; ++i)
    old_epoch = publish(hub_a, "t", "m" + std::to_string(i)).position.epoch;
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() == 5; }, "the first 5 on node b");
  // The old master's message for offset 6, which the stream never keeps.
  redis.command({"PUBLISH", b.redis_channel("t"), "p6:" + old_epoch + ":0:phantom"});
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() == 6; }, "the phantom on node b");
  CHECK(sub.got[5]->data == "phantom");
  // The new master's offset 6, which node b never hears live (it listened
  // to the old master).
  const std::string keys = channel_keys(b, "t");
  redis.command({"XADD", keys + ":s", "6-0", "d", "real6", "i", ""});
  redis.command({"HSET", keys + ":m", "s", "6"});
  // A read on node b (a join): the entry at its top is not the phantom.
  Recorder late;
  const auto joined = subscribe(hub_b, late, "t");
  REQUIRE_FALSE(joined.error);
  const std::string new_epoch = joined.position.epoch;
  CHECK(new_epoch != old_epoch);
  CHECK(joined.position.offset == 6);
  REQUIRE_FALSE(publish(hub_a, "t", "after").error);
  wait_for(
      {&hub_a, &hub_b}, [&] { return sub.got.size() >= 7; }, "the publication after it");
  hub_b.poll();
  REQUIRE(sub.got.size() == 7);
  CHECK(sub.got[6]->data == "after");
  CHECK(sub.got[6]->epoch == new_epoch);  // the subscriber is told: reload
  CHECK(data_of(history(hub_b, "t").publications) ==
        std::vector<std::string>{"m1", "m2", "m3", "m4", "m5", "real6", "after"});
  CHECK(b.stats().rewinds == 1);
  // A read that finds the entry it delivered at its top changes nothing.
  Recorder later;
  CHECK(subscribe(hub_b, later, "t").position.epoch == new_epoch);
  CHECK(b.stats().rewinds == 1);
}
