// push::DelayedQueue against a real redis-server of the test's own
// (OneRedis), and the same cases on a real Redis Cluster of six processes
// (Cluster: the queue's partitions over three masters): two queues (two
// "nodes", each with its own Redis link) loading the same window deliver
// each push once; a claim left unacknowledged is re-queued after its lease
// and delivered by the other queue; cancel; a restart delivers overdue
// pushes at once; pushes accepted before a Redis restart are delivered after
// it, once; pushes due while a cluster master is killed are delivered.
#include <heartwheel/common/error.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "delayed_queue_support.h"

TEMPLATE_TEST_CASE(
    "Two delayed queues loading the same window deliver each push exactly once and on time",
    "[push][delayed][redis]", OneRedis, Cluster) {
  hwproc::Watchdog dog(Ms(90000));
  TestType server;
  TestLoop t;
  Deliveries got;
  Node a(t, server.link(), fast_options(), got.recorder());
  Node b(t, server.link(), fast_options(), got.recorder());
  start_both(t, a, b);

  // 200 pushes due over the next 1.5 s, scheduled alternately on both nodes
  // (all inside the loaded window: each goes straight into its node's wheel).
  constexpr int kPushes = 200;
  int accepted = 0;
  const auto start = push::WallClock::now();
  for (int i = 0; i < kPushes; ++i) {
    push::DelayedQueue& q = i % 2 ? b.queue : a.queue;
    REQUIRE_FALSE(q.schedule("c", std::to_string(i), start + 300ms + i * 6ms,
                             [&](std::error_code ec, const push::DelayedPush&) {
                               CHECK_FALSE(ec);
                               ++accepted;
                             }));
  }
  REQUIRE(t.run_until([&] { return accepted == kPushes; }));
  CHECK(a.queue.held() + b.queue.held() >= kPushes);  // held at once, by their own node

  // The other node's load takes them into its wheel too (every node loads
  // the same window): both race for each claim.
  REQUIRE(t.run_until([&] { return got.total() >= kPushes; }, 15s));
  t.run_for(1500ms);  // anything delivered twice would show by now
  CHECK(got.total() == kPushes);
  CHECK(got.max_count() == 1);
  CHECK(got.early == 0);
  // ~one tick + a round trip; the bound leaves room for a loaded machine.
  for (const auto late : got.lateness) CHECK(late < 2000ms);
  const auto sa = a.queue.stats(), sb = b.queue.stats();
  CHECK(sa.claimed + sb.claimed == kPushes);
  CHECK(sa.delivered + sb.delivered == kPushes);
  CHECK(sa.acked + sb.acked == kPushes);
  CHECK(sa.scheduled + sb.scheduled == kPushes);
  CHECK(sa.redis_errors + sb.redis_errors == 0);
  CHECK(a.queue.held() + b.queue.held() == 0);
  // Redis keeps nothing of a delivered push.
  CHECK(server.size("ZCARD", "due") == 0);
  CHECK(server.size("ZCARD", "claims") == 0);
  CHECK(server.size("HLEN", "data") == 0);
  const auto merged = [&] {
    push::DelayedQueueStats m = sa;
    m.merge(sb);
    return m;
  }();
  CHECK(merged.queues == 2);
  CHECK(merged.claimed == kPushes);
  CHECK(nlohmann::json::parse(push::to_json(merged))["claimed"] == kPushes);
}

TEMPLATE_TEST_CASE("A claim whose lease runs out is re-queued and delivered by the other queue",
                   "[push][delayed][redis]", OneRedis, Cluster) {
  hwproc::Watchdog dog(Ms(90000));
  TestType server;
  TestLoop t;
  // Node A claims, then "dies" before acknowledging: its deliver throws
  // (the claim stays unacknowledged), and it is stopped.
  int a_attempts = 0;
  Node a(t, server.link(), fast_options(), [&](const push::DelayedPush&) {
    ++a_attempts;
    throw std::runtime_error("node A died while delivering");
  });
  a.queue.start();
  const std::string id = schedule(t, a.queue, "c", "\"payload\"", push::WallClock::now() + 100ms);
  REQUIRE(t.run_until([&] { return a_attempts == 1; }));
  CHECK(a.queue.stats().claimed == 1);
  CHECK(a.queue.stats().deliver_errors == 1);
  a.queue.stop();
  const auto died = push::WallClock::now();
  CHECK(server.size("ZCARD", "claims") == 1);

  // Node B starts: the push is neither due nor held anywhere, only claimed.
  Deliveries got;
  Node b(t, server.link(), fast_options(), got.recorder());
  b.queue.start();
  REQUIRE(t.run_until([&] { return got.total() == 1; }, 10s));
  const auto after = push::WallClock::now() - died;
  CHECK(after >= 900ms);  // not before A's lease (1 s from its claim) ran out
  CHECK(after < 3000ms);  // lease + one reap interval + a claim, with slack
  CHECK(got.count[id] == 1);
  CHECK(got.data[id] == "\"payload\"");
  CHECK(b.queue.stats().requeued == 1);
  CHECK(b.queue.stats().claimed == 1);
  t.run_for(500ms);
  CHECK(got.total() == 1);
  CHECK(server.size("HLEN", "data") == 0);
}

TEMPLATE_TEST_CASE("An asynchronous delivery is acknowledged only once it reports success",
                   "[push][delayed][redis]", OneRedis, Cluster) {
  hwproc::Watchdog dog(Ms(90000));
  TestType server;
  TestLoop t;
  redis::Client client(*t.wheel, server.link());
  client.start();
  std::vector<push::DeliveredCallback> pending;
  push::DelayedQueue q(*t.wheel, client, fast_options(),
                       [&](const push::DelayedPush&, push::DeliveredCallback done) {
                         pending.push_back(std::move(done));
                       });
  q.start();
  schedule(t, q, "c", "1", push::WallClock::now());
  REQUIRE(t.run_until([&] { return pending.size() == 1; }));
  t.run_for(200ms);
  CHECK(q.stats().acked == 0);  // nothing acknowledged while the delivery is out
  CHECK(server.size("ZCARD", "claims") == 1);
  pending[0](false);  // the broker refused: left to the lease
  pending[0](true);   // a second call does nothing
  CHECK(q.stats().deliver_errors == 1);
  CHECK(q.stats().delivered == 0);
  REQUIRE(t.run_until([&] { return pending.size() == 2; }, 10s));  // re-queued after the lease
  CHECK(q.stats().requeued == 1);
  pending[1](true);
  REQUIRE(t.run_until([&] { return q.stats().acked == 1; }));
  CHECK(q.stats().delivered == 1);
  CHECK(server.size("HLEN", "data") == 0);
  CHECK(server.size("ZCARD", "claims") == 0);
}

TEMPLATE_TEST_CASE(
    "Cancel removes a push nobody claimed and reports false for unknown or delivered ones",
    "[push][delayed][redis]", OneRedis, Cluster) {
  hwproc::Watchdog dog(Ms(90000));
  TestType server;
  TestLoop t;
  Deliveries got;
  Node a(t, server.link(), fast_options(), got.recorder());
  Node b(t, server.link(), fast_options(), got.recorder());
  start_both(t, a, b);

  auto cancel = [&](push::DelayedQueue& q, const std::string& id) {
    std::optional<bool> result;
    REQUIRE_FALSE(q.cancel(id, [&](std::error_code ec, bool cancelled) {
      CHECK_FALSE(ec);
      result = cancelled;
    }));
    REQUIRE(t.run_until([&] { return result.has_value(); }));
    return *result;
  };

  // Scheduled on A (held in A's wheel), cancelled on B: gone everywhere.
  const std::string id = schedule(t, a.queue, "c", "1", push::WallClock::now() + 700ms);
  CHECK(a.queue.held() == 1);
  CHECK(cancel(b.queue, id));
  t.run_for(1200ms);
  CHECK(got.total() == 0);
  CHECK(a.queue.held() == 0);  // its claim found it gone
  CHECK(a.queue.stats().claimed_elsewhere + b.queue.stats().claimed_elsewhere >= 1);
  CHECK_FALSE(cancel(a.queue, id));           // already cancelled
  CHECK_FALSE(cancel(a.queue, "not-an-id"));  // unknown
  // Delivered: too late to cancel.
  const std::string later = schedule(t, b.queue, "c", "2", push::WallClock::now());
  REQUIRE(t.run_until([&] { return got.total() == 1; }));
  CHECK(got.count[later] == 1);
  CHECK_FALSE(cancel(a.queue, later));
  CHECK(b.queue.stats().cancelled == 1);
  CHECK(a.queue.stats().cancel_missed == 3);
  // Cancelled on the node that holds it: out of its wheel at once.
  const std::string third = schedule(t, a.queue, "c", "3", push::WallClock::now() + 5s);
  CHECK(a.queue.held() == 1);
  CHECK(cancel(a.queue, third));
  CHECK(a.queue.held() == 0);
}

TEMPLATE_TEST_CASE("After a restart of every node overdue pushes are delivered at once",
                   "[push][delayed][redis]", OneRedis, Cluster) {
  hwproc::Watchdog dog(Ms(90000));
  TestType server;
  TestLoop t;
  Deliveries got;
  std::vector<std::string> ids;
  {
    Node a(t, server.link(), fast_options(), got.recorder());
    a.queue.start();
    REQUIRE(t.run_until([&] { return a.queue.stats().loads > 0; }));
    const auto now = push::WallClock::now();
    for (int i = 0; i < 20; ++i)
      ids.push_back(schedule(t, a.queue, "c", std::to_string(i), now + 300ms + i * 10ms));
    CHECK(a.queue.held() == 20);
  }                   // the node goes away before any is due
  t.run_for(1000ms);  // every push is now overdue, and no node runs
  CHECK(got.total() == 0);
  CHECK(server.size("ZCARD", "due") == 20);

  Node b(t, server.link(), fast_options(), got.recorder());
  Node c(t, server.link(), fast_options(), got.recorder());
  const auto restarted = push::WallClock::now();
  b.queue.start();
  c.queue.start();
  REQUIRE(t.run_until([&] { return got.total() >= 20; }, 10s));
  CHECK(push::WallClock::now() - restarted < 1000ms);  // the first load brings them
  t.run_for(800ms);
  CHECK(got.total() == 20);
  CHECK(got.max_count() == 1);
  for (const auto& id : ids) CHECK(got.count[id] == 1);
}

TEST_CASE("Pushes accepted before a Redis restart are delivered after it exactly once",
          "[push][delayed][redis][restart]") {
  hwproc::Watchdog dog(Ms(90000));
  OneRedis backend{RedisServer(/*durable=*/true)};
  RedisServer& server = backend.server;
  TestLoop t;
  Deliveries got;
  Node a(t, backend.link(), fast_options(), got.recorder());
  Node b(t, backend.link(), fast_options(), got.recorder());
  start_both(t, a, b);
  constexpr int kPushes = 50;
  const auto now = push::WallClock::now();
  std::vector<std::string> ids;
  for (int i = 0; i < kPushes; ++i)
    ids.push_back(
        schedule(t, i % 2 ? a.queue : b.queue, "c", std::to_string(i), now + 1500ms + i * 10ms));

  // Redis dies before any is due and stays down past every due time: the
  // nodes' claims wait in their links' buffers (or fail and are retried)
  // and nothing is delivered.
  server.kill();
  t.run_for(2500ms);
  CHECK(got.total() == 0);
  CHECK(a.queue.stats().fired + b.queue.stats().fired >= kPushes);

  server.restart();
  REQUIRE(t.run_until([&] { return got.total() >= kPushes; }, 20s));
  t.run_for(1500ms);
  CHECK(got.total() == kPushes);
  CHECK(got.max_count() == 1);
  for (const auto& id : ids) CHECK(got.count[id] == 1);
  CHECK(got.early == 0);
  CHECK(backend.size("HLEN", "data") == 0);
}

TEST_CASE("Delayed queue options are validated with the field named", "[push][delayed]") {
  push::DelayedQueueOptions o;
  CHECK_NOTHROW(o.validate());
  o.window = 1s;
  o.load_interval = 2s;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("load_interval"));
  o = {};
  o.lease = {};
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("lease"));
  o = {};
  o.key_prefix.clear();
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("key_prefix"));
  o = {};
  o.key_prefix = "push{x}:";
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("braces"));
  o = {};
  o.partitions = 0;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("partitions"));
}

TEST_CASE("Pushes due while a cluster master is killed are delivered after its replica takes over",
          "[push][delayed][redis][cluster][failover]") {
  hwproc::Watchdog dog(Ms(120000));
  Cluster server;
  TestLoop t;
  Deliveries got;
  auto link = server.link();
  link.wait_replicas = 1;  // acknowledged pushes and claims are on a replica too
  link.wait_timeout = 1s;
  link.command_timeout = 3s;
  // While the new master has no replica, each claim's WAIT takes its 1 s
  // timeout: the lease must outlast it (the queue refuses a shorter one).
  auto o = fast_options();
  o.lease = 5s;
  Node a(t, link, o, got.recorder());
  Node b(t, link, o, got.recorder());
  start_both(t, a, b);
  auto short_lease = fast_options();
  short_lease.lease = 1500ms;
  CHECK_THROWS_WITH(push::DelayedQueue(*t.wheel, a.client, short_lease, got.recorder()),
                    Catch::Contains("wait_timeout"));

  // 60 pushes over every partition (every master), due from 1 s to 4 s.
  constexpr int kPushes = 60;
  const auto start = push::WallClock::now();
  std::vector<std::string> ids;
  for (int i = 0; i < kPushes; ++i)
    ids.push_back(schedule(t, i % 2 ? a.queue : b.queue, "c", std::to_string(i),
                           start + 1000ms + i * 50ms));
  // The master of partition 0 dies in the middle of it.
  const int victim = server.cluster.master_of(
      redis::key_slot(kPrefix + redis::Partitions(16).braced(0) + "due"));
  t.run_until([&] { return push::WallClock::now() - start >= 1800ms; }, 5s);
  server.cluster.kill(victim);
  REQUIRE(t.run_until([&] { return got.count.size() == kPushes; }, 40s));
  t.run_for(2000ms);  // a second delivery would show by now
  int twice = 0;
  for (const auto& id : ids) {
    CHECK(got.count[id] >= 1);
    twice += got.count[id] > 1 ? 1 : 0;
  }
  auto latest = std::chrono::milliseconds(0);
  for (const auto late : got.lateness) latest = std::max(latest, late);
  INFO("delivered twice: " << twice << ", latest " << latest.count() << " ms late");
  CHECK(got.early == 0);
  CHECK(twice <= 2);  // at-least-once: a claim lost with its master may run again
  CHECK(latest < 25000ms);
  CHECK(a.client.stats().failovers + b.client.stats().failovers >= 1);
}

TEST_CASE("A push scheduled with an owner is cancelled only by that owner or an admin, and is "
          "delivered with its owner, and ids are random UUIDv4s",
          "[push][delayed][redis]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  std::vector<push::DelayedPush> got;
  Node a(t, link_to<redis::ClientOptions>(server), fast_options(), [&](const push::DelayedPush& p) { got.push_back(p); });
  a.queue.start();
  REQUIRE(t.run_until([&] { return a.queue.stats().loads > 0; }));

  auto schedule_as = [&](const std::string& owner, const std::string& data, push::WallTime due) {
    std::string id;
    REQUIRE_FALSE(a.queue.schedule("ch:1", data, due, owner,
                                   [&](std::error_code ec, const push::DelayedPush& p) {
                                     CHECK_FALSE(ec);
                                     CHECK(p.owner == owner);
                                     id = p.id;
                                   }));
    REQUIRE(t.run_until([&] { return !id.empty(); }));
    return id;
  };
  auto cancel_as = [&](const std::string& id, std::optional<std::string_view> owner) {
    std::optional<bool> result;
    REQUIRE_FALSE(a.queue.cancel(id, owner, [&](std::error_code ec, bool cancelled) {
      CHECK_FALSE(ec);
      result = cancelled;
    }));
    REQUIRE(t.run_until([&] { return result.has_value(); }));
    return *result;
  };

  const auto later = push::WallClock::now() + 30s;
  const std::string mine = schedule_as("key-1", "1", later);
  CHECK_FALSE(cancel_as(mine, std::string_view("key-2")));  // another key: as if unknown
  CHECK_FALSE(cancel_as(mine, std::string_view("")));       // no key
  CHECK_FALSE(cancel_as(mine, std::string_view("key-")));   // a prefix of the owner
  CHECK(cancel_as(mine, std::string_view("key-1")));
  CHECK(cancel_as(schedule_as("key-1", "2", later), std::nullopt));  // an admin: any owner
  // No owner: only a cancel without a key (or an admin) removes it.
  const std::string anon = schedule_as("", "3", later);
  CHECK_FALSE(cancel_as(anon, std::string_view("key-1")));
  CHECK(cancel_as(anon, std::string_view("")));

  // Delivered with owner, channel and data intact (an owner with ':' and '~').
  schedule_as("k:~9:x", "{\"a\":1}", push::WallClock::now());
  REQUIRE(t.run_until([&] { return got.size() == 1; }));
  CHECK(got[0].owner == "k:~9:x");
  CHECK(got[0].channel == "ch:1");
  CHECK(got[0].data == "{\"a\":1}");

  // UUIDv4 shape; 1,000 ids all distinct.
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(schedule_as("", std::to_string(i), later));
  CHECK(ids.size() == 1000);
  for (const std::string& id : ids) {
    REQUIRE(id.size() == 36);
    CHECK(id[8] == '-');
    CHECK(id[14] == '4');
    CHECK(std::string_view("89ab").find(id[19]) != std::string_view::npos);
  }
}

namespace {
// An owner's pending count as Redis holds it (one redis-server: one hash).
std::int64_t pending_of(RedisServer& server, const std::string& owner) {
  const redis::Reply r = server.command({"HGET", std::string(kPrefix) + "owners", owner});
  return r.is_string() ? std::stoll(std::string(r.str())) : 0;
}

struct CappedNode {
  CappedNode(TestLoop& t, RedisServer& server, std::size_t cap, push::DeliverFunction deliver)
      : loop(t), node(t, link_to<redis::ClientOptions>(server), options(cap), std::move(deliver)) {
    node.queue.start();
    REQUIRE(t.run_until([&] { return node.queue.stats().loads > 0; }));
  }
  static push::DelayedQueueOptions options(std::size_t cap) {
    push::DelayedQueueOptions o = fast_options();
    o.max_pending_per_owner = cap;
    return o;
  }
  // The push's id, or "" when the callback said limit_reached.
  std::string schedule(const std::string& owner, push::WallTime due) {
    std::optional<std::string> id;
    REQUIRE_FALSE(node.queue.schedule("c", "1", due, owner,
                                      [&](std::error_code ec, const push::DelayedPush& p) {
                                        if (ec) CHECK(ec == heartwheel::errc::limit_reached);
                                        id = ec ? std::string() : p.id;
                                      }));
    REQUIRE(loop.run_until([&] { return id.has_value(); }));
    return *id;
  }
  bool cancel(const std::string& id) {
    std::optional<bool> result;
    REQUIRE_FALSE(node.queue.cancel(id, [&](std::error_code ec, bool cancelled) {
      CHECK_FALSE(ec);
      result = cancelled;
    }));
    REQUIRE(loop.run_until([&] { return result.has_value(); }));
    return *result;
  }
  TestLoop& loop;
  Node node;
};
}  // namespace

TEST_CASE("An owner's pending pushes are capped in Redis, and a cancel uncounts a push once",
          "[push][delayed][redis]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  CappedNode n(t, server, 3, [](const push::DelayedPush&) {});
  const auto later = push::WallClock::now() + 30s;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(n.schedule("key-1", later));
  for (const std::string& id : ids) CHECK_FALSE(id.empty());
  CHECK(pending_of(server, "key-1") == 3);
  CHECK(n.schedule("key-1", later).empty());  // the 4th: refused, nothing stored
  CHECK(n.node.queue.stats().schedule_capped == 1);
  CHECK(n.node.queue.stats().scheduled == 3);
  CHECK(pending_of(server, "key-1") == 3);
  // Another owner (and the empty one) has a count of its own.
  const std::string other = n.schedule("key-2", later);
  CHECK_FALSE(other.empty());
  CHECK_FALSE(n.schedule("", later).empty());
  CHECK(pending_of(server, "key-2") == 1);
  CHECK(pending_of(server, "") == 1);
  // A cancel uncounts once: a second cancel of the same id changes nothing.
  CHECK(n.cancel(ids[0]));
  CHECK(pending_of(server, "key-1") == 2);
  CHECK_FALSE(n.cancel(ids[0]));
  CHECK(pending_of(server, "key-1") == 2);
  CHECK_FALSE(n.cancel("not-an-id"));
  CHECK(pending_of(server, "key-1") == 2);
  // Room for one again, then the cap again.
  CHECK_FALSE(n.schedule("key-1", later).empty());
  CHECK(n.schedule("key-1", later).empty());
  CHECK(pending_of(server, "key-1") == 3);
  // At zero the owner's field is gone (the hash does not keep every owner ever seen).
  CHECK(n.cancel(other));
  CHECK(server.command({"HEXISTS", std::string(kPrefix) + "owners", "key-2"}).integer() == 0);
}

TEST_CASE("A delivered push is uncounted once, when acknowledged, and makes room for the next",
          "[push][delayed][redis]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  Deliveries got;
  CappedNode n(t, server, 2, got.recorder());
  const auto later = push::WallClock::now() + 30s;
  CHECK_FALSE(n.schedule("key-1", later).empty());
  const std::string soon = n.schedule("key-1", push::WallClock::now() + 200ms);
  CHECK_FALSE(soon.empty());
  CHECK(n.schedule("key-1", later).empty());  // at the cap while `soon` waits
  CHECK(pending_of(server, "key-1") == 2);
  REQUIRE(t.run_until([&] { return n.node.queue.stats().acked == 1; }, 10s));
  CHECK(got.count[soon] == 1);
  CHECK(pending_of(server, "key-1") == 1);
  t.run_for(500ms);  // nothing else decrements it (the lease, the reaper)
  CHECK(pending_of(server, "key-1") == 1);
  CHECK_FALSE(n.schedule("key-1", later).empty());
  CHECK(n.schedule("key-1", later).empty());
  CHECK(pending_of(server, "key-1") == 2);
  // A push stored before the counts (no owner prefix) is delivered and
  // uncounts nothing.
  const redis::Partitions tags(16);
  const std::string base = std::string(kPrefix) + tags.braced(tags.of("legacy-id"));
  server.command({"HSET", base + "data", "legacy-id", "1:c\"old\""});
  server.command({"ZADD", base + "due", "0", "legacy-id"});
  REQUIRE(t.run_until([&] { return got.count["legacy-id"] == 1; }, 10s));
  REQUIRE(t.run_until([&] { return n.node.queue.stats().acked == 2; }, 10s));
  CHECK(got.data["legacy-id"] == "\"old\"");
  CHECK(pending_of(server, "key-1") == 2);
  CHECK(pending_of(server, "") == 0);
}

TEST_CASE("On a Redis Cluster each partition holds its share of an owner's cap",
          "[push][delayed][redis]") {
  hwproc::Watchdog dog(Ms(90000));
  Cluster server;
  TestLoop t;
  push::DelayedQueueOptions o = fast_options();
  o.partitions = 2;
  o.max_pending_per_owner = 2;  // a share of 1 per partition
  Node n(t, server.link(), o, [](const push::DelayedPush&) {});
  n.queue.start();
  REQUIRE(t.run_until([&] { return n.queue.stats().loads > 0; }));
  // 20 attempts: the random ids fall in both partitions (all in one: 2^-19),
  // each takes one, every other attempt is refused.
  int accepted = 0, refused = 0;
  for (int i = 0; i < 20; ++i) {
    bool done = false;
    REQUIRE_FALSE(n.queue.schedule("c", "1", push::WallClock::now() + 30s, "key-1",
                                   [&](std::error_code ec, const push::DelayedPush&) {
                                     if (ec == heartwheel::errc::limit_reached)
                                       ++refused;
                                     else if (!ec)
                                       ++accepted;
                                     done = true;
                                   }));
    REQUIRE(t.run_until([&] { return done; }));
  }
  CHECK(accepted == 2);
  CHECK(refused == 18);
  CHECK(n.queue.stats().schedule_capped == 18);
  CHECK(server.size("HLEN", "owners", 2) == 2);  // one field in each partition's hash
  CHECK(server.size("HLEN", "data", 2) == 2);
}
