// redis::Client in cluster mode against a real Redis Cluster of the test's
// own (six redis-server processes: three masters, three replicas, started
// and stopped by PID; tests/integration/redis_server.h): commands to keys on
// every master, MOVED after a slot migrated while commands run, ASK during a
// migration, a master killed (SIGKILL) and its replica promoted, WAIT.
#include <heartwheel/common/error.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/slot.h>

#include <algorithm>
#include <map>

#include "redis_test_support.h"

using namespace hwtest;
using hwproc::Ms;
using hwerrc = heartwheel::errc;

namespace {

// A timer on the test loop running `f` every `every` until stopped. The
// handle is freed by its close callback (the loop may still touch it after
// uv_close), so stopping early is safe whenever the loop runs again.
struct Every {
  Every(uv_loop_t* loop, Duration every, std::function<void()> f)
      : timer(new uv_timer_t), fn(std::move(f)) {
    uv_timer_init(loop, timer);
    timer->data = this;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(every).count();
    uv_timer_start(
        timer, [](uv_timer_t* t) { static_cast<Every*>(t->data)->fn(); }, 0,
        static_cast<std::uint64_t>(ms));
  }
  ~Every() { stop(); }
  Every(const Every&) = delete;
  Every& operator=(const Every&) = delete;
  void stop() {
    if (timer == nullptr) return;
    uv_timer_stop(timer);
    uv_close(reinterpret_cast<uv_handle_t*>(timer),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    timer = nullptr;
  }
  uv_timer_t* timer;
  std::function<void()> fn;
};

}  // namespace

TEST_CASE("A cluster client sends each command to its slot's master on every master",
          "[redis][cluster]") {
  hwproc::Watchdog dog(Ms(120000));
  RedisCluster cluster;
  TestLoop t;
  auto o = cluster_link<redis::ClientOptions>(cluster);
  LinkEvents events;
  events.hook(o);
  redis::Client client(*t.wheel, o);
  client.start();

  // Issued before the slot map is known: they wait, then go out.
  std::vector<Outcome> sets(300);
  for (int i = 0; i < 300; ++i)
    REQUIRE_FALSE(client.command({"SET", "key:" + std::to_string(i), std::to_string(i)},
                                 sets[static_cast<std::size_t>(i)].callback()));
  // Masters answer in any order: every one, not the last sent.
  REQUIRE(t.run_until([&] {
    return std::all_of(sets.begin(), sets.end(), [](const Outcome& s) { return s.done; });
  }));
  for (const auto& s : sets) {
    INFO(s.error.message());
    CHECK(s.reply.is("OK"));
  }

  // Each key is on the master the cluster says owns its slot.
  const auto masters = cluster.masters();
  REQUIRE(masters.size() == 3);
  std::map<int, int> keys_per_master;
  for (int i = 0; i < 300; ++i) {
    const std::string key = "key:" + std::to_string(i);
    const int port = cluster.master_of(redis::key_slot(key));
    CHECK(cluster.command(port, {"GET", key}) == redis::Reply::string(std::to_string(i)));
    ++keys_per_master[port];
  }
  CHECK(keys_per_master.size() == 3);

  // Scripts by their first key, keyless commands anywhere; Redis's own
  // refusal of a script across slots comes back as it is.
  static const redis::Script both("return {redis.call('GET', KEYS[1]), ARGV[1]}");
  Outcome script, ping, cross;
  REQUIRE_FALSE(client.command(both.call({"key:7"}, {"x"}), script.callback()));
  REQUIRE_FALSE(client.command({"PING"}, ping.callback()));
  REQUIRE_FALSE(client.command({"MSET", "{a}1", "1", "{b}1", "1"}, cross.callback()));
  REQUIRE(t.run_until([&] { return script.done && ping.done && cross.done; }));
  CHECK(script.reply ==
        redis::Reply::array({redis::Reply::string("7"), redis::Reply::string("x")}));
  CHECK(ping.reply.is("PONG"));
  CHECK(cross.error == redis::errc::server_error);
  CHECK(cross.reply.str().substr(0, 9) == "CROSSSLOT");

  const auto per_master = client.masters();
  REQUIRE(per_master.size() == 3);
  std::uint64_t slots = 0;
  for (const auto& m : per_master) {
    CHECK(m.connected);
    CHECK(m.link.commands > 0);
    slots += m.slots;
  }
  CHECK(slots == redis::kSlotCount);
  const redis::LinkStats s = client.stats();
  CHECK(s.commands == 303);
  CHECK(s.replies_ok == 302);
  CHECK(s.replies_error == 1);
  CHECK(s.cluster_masters == 3);
  CHECK(s.slot_map_refreshes >= 1);
  CHECK(s.redirects_moved == 0);
  CHECK(s.connected == 4);  // three masters and the slot map's connection
  CHECK(events.errors.empty());
  CHECK(redis::to_json(per_master).find("\"slots\":") != std::string::npos);
}

TEST_CASE("A slot migrated while commands run has ASK and MOVED followed and nothing lost",
          "[redis][cluster]") {
  hwproc::Watchdog dog(Ms(120000));
  RedisCluster cluster;
  TestLoop t;
  auto o = cluster_link<redis::ClientOptions>(cluster);
  redis::Client client(*t.wheel, o);
  client.start();

  const std::uint16_t slot = redis::key_slot("{moving}");
  const int from = cluster.master_of(slot);
  const auto masters = cluster.masters();
  const int to = masters[0] == from ? masters[1] : masters[0];
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back("{moving}:" + std::to_string(i));

  // Every 5 ms one INCR per key; the migration's three steps happen on the
  // loop thread in between (each blocks the loop briefly, as a pause would).
  std::map<std::string, std::int64_t> done;
  int failures = 0, issued = 0;
  bool migrating = true;
  Every traffic(&t.loop, 5ms, [&] {
    if (!migrating) return;
    for (const auto& k : keys) {
      ++issued;
      REQUIRE_FALSE(client.command({"INCR", k}, [&, k](std::error_code ec, redis::Reply r) {
        if (ec) {
          ++failures;
          UNSCOPED_INFO(ec.message() << " " << r.str());
          return;
        }
        done[k] = std::max(done[k], r.integer());
      }));
    }
  });
  int step = 0;
  bool steps_ok = true;
  Every migration(&t.loop, 150ms, [&] {
    if (step == 1) steps_ok &= cluster.begin_migration(slot, from, to);
    if (step == 2) steps_ok &= cluster.move_keys(slot, from, to);
    if (step == 4) steps_ok &= cluster.finish_migration(slot, from, to);
    if (step == 6) migrating = false;
    ++step;
  });
  REQUIRE(t.run_until([&] { return !migrating; }, 20s));
  migration.stop();
  traffic.stop();
  REQUIRE(steps_ok);
  REQUIRE(t.run_until([&] { return client.in_flight() == 0 && client.buffered() == 0; }));
  CHECK(failures == 0);

  // Every INCR counted once, on the new master.
  REQUIRE(cluster.master_of(slot) == to);
  std::int64_t total = 0;
  for (const auto& k : keys) {
    const auto value = cluster.command(to, {"GET", k});
    CHECK(std::stoll(std::string(value.str())) == done[k]);
    total += done[k];
  }
  CHECK(total == issued);
  const auto s = client.stats();
  CHECK(s.redirects_ask > 0);    // between MIGRATE and SETSLOT NODE
  CHECK(s.redirects_moved > 0);  // after SETSLOT NODE
  CHECK(s.redirect_errors == 0);
  CHECK(s.slot_map_refreshes >= 2);  // the MOVED made it read the map again
  CHECK(s.replies_ok == static_cast<std::uint64_t>(issued));
}

TEST_CASE("During a migration a key the source no longer has is asked of the target (ASK)",
          "[redis][cluster]") {
  hwproc::Watchdog dog(Ms(120000));
  RedisCluster cluster;
  TestLoop t;
  redis::Client client(*t.wheel, cluster_link<redis::ClientOptions>(cluster));
  client.start();
  const std::uint16_t slot = redis::key_slot("{ask}");
  const int from = cluster.master_of(slot);
  const auto masters = cluster.masters();
  const int to = masters[0] == from ? masters[1] : masters[0];
  Outcome before;
  REQUIRE_FALSE(client.command({"SET", "{ask}old", "1"}, before.callback()));
  REQUIRE(t.run_until([&] { return before.done; }));
  REQUIRE(cluster.begin_migration(slot, from, to));

  // A new key goes to the target (the source does not have it); the old
  // one is still served by the source; neither moves the slot in the map.
  Outcome set_new, get_new, get_old;
  REQUIRE_FALSE(client.command({"SET", "{ask}new", "2"}, set_new.callback()));
  REQUIRE_FALSE(client.command({"GET", "{ask}new"}, get_new.callback()));
  REQUIRE_FALSE(client.command({"GET", "{ask}old"}, get_old.callback()));
  REQUIRE(t.run_until([&] { return set_new.done && get_new.done && get_old.done; }));
  CHECK(set_new.reply.is("OK"));
  CHECK(get_new.reply == redis::Reply::string("2"));
  CHECK(get_old.reply == redis::Reply::string("1"));
  CHECK(client.stats().redirects_ask == 2);
  CHECK(client.stats().redirects_moved == 0);
  CHECK(cluster.command(from, {"EXISTS", "{ask}new"}).integer() == 0);
  CHECK(cluster.command(to, {"DBSIZE"}).integer() == 1);  // {ask}new, nothing else

  REQUIRE(cluster.move_keys(slot, from, to));
  REQUIRE(cluster.finish_migration(slot, from, to));
  Outcome after;
  REQUIRE_FALSE(client.command({"GET", "{ask}old"}, after.callback()));
  REQUIRE(t.run_until([&] { return after.done; }));
  CHECK(after.reply == redis::Reply::string("1"));
  CHECK(client.stats().redirects_moved == 1);
}

TEST_CASE("A killed master's slots fail at most until its replica is promoted and then succeed",
          "[redis][cluster][failover]") {
  hwproc::Watchdog dog(Ms(120000));
  RedisCluster cluster;
  TestLoop t;
  auto o = cluster_link<redis::ClientOptions>(cluster);
  o.command_timeout = 2s;
  redis::Client client(*t.wheel, o);
  client.start();

  const std::uint16_t slot = redis::key_slot("{victim}");
  const int victim = cluster.master_of(slot);
  // A key on every master: the others must keep working throughout (or
  // answer CLUSTERDOWN only while the cluster itself is down).
  std::vector<std::string> keys{"{victim}x"};
  for (int port : cluster.masters())
    if (port != victim)
      for (int i = 0;; ++i)
        if (cluster.master_of(redis::key_slot("o" + std::to_string(i))) == port) {
          keys.push_back("o" + std::to_string(i));
          break;
        }
  REQUIRE(keys.size() == 3);

  struct Result {
    Duration issued, answered;
    std::error_code error;
  };
  std::vector<Result> results;
  Duration killed_at{};
  Every traffic(&t.loop, 20ms, [&] {
    for (const auto& k : keys) {
      const Duration at = hr_now();
      REQUIRE_FALSE(client.command({"INCR", k}, [&, at](std::error_code ec, redis::Reply) {
        results.push_back({at, hr_now(), ec});
      }));
    }
  });
  t.run_for(300ms);
  REQUIRE_FALSE(results.empty());
  for (const auto& r : results) REQUIRE_FALSE(r.error);
  killed_at = hr_now();
  cluster.kill(victim);

  // Wait for the promotion, then for two seconds of traffic after it.
  REQUIRE(t.run_until([&] { return client.stats().failovers >= 1; }, 30s));
  const Duration promoted_at = hr_now();
  t.run_for(2s);
  traffic.stop();
  REQUIRE(t.run_until([&] { return client.in_flight() == 0 && client.buffered() == 0; }));

  // Every command issued after the promotion was seen succeeded; failures
  // (timed out, disconnected, CLUSTERDOWN) only happened in the window.
  std::size_t failed = 0, after = 0;
  Duration last_failure{};
  for (const auto& r : results) {
    if (r.issued > promoted_at) {
      ++after;
      CHECK_FALSE(r.error);
    }
    if (r.error) {
      ++failed;
      last_failure = std::max(last_failure, r.answered);
    }
  }
  CHECK(after > 30);
  INFO("failed " << failed << " of " << results.size() << ", failure window "
                 << std::chrono::duration_cast<std::chrono::milliseconds>(last_failure - killed_at)
                        .count()
                 << " ms");
  if (failed > 0) CHECK(last_failure - killed_at < 20s);
  const auto masters = client.masters();
  REQUIRE(masters.size() == 3);
  for (const auto& m : masters) {
    CHECK(m.connected);
    CHECK(m.address != "127.0.0.1:" + std::to_string(victim));
  }
  CHECK(client.stats().failovers == 1);
  CHECK(client.connected());
}

TEST_CASE("A durable write waits for its replica and too few replicas is not_replicated",
          "[redis][cluster][wait]") {
  hwproc::Watchdog dog(Ms(120000));
  RedisCluster cluster;
  TestLoop t;
  auto o = cluster_link<redis::ClientOptions>(cluster);
  o.wait_replicas = 1;
  o.wait_timeout = 5s;  // the replica answers at once; the bound is for a loaded machine
  redis::Client one(*t.wheel, o);
  o.wait_replicas = 2;  // each master has one
  o.wait_timeout = 300ms;
  redis::Client two(*t.wheel, o);
  one.start();
  two.start();
  Outcome a, b, plain;
  REQUIRE_FALSE(one.command({"SET", "{d}one", "1"}, a.callback(), {.durable = true}));
  REQUIRE_FALSE(two.command({"SET", "{d}two", "2"}, b.callback(), {.durable = true}));
  REQUIRE_FALSE(two.command({"SET", "{d}plain", "3"}, plain.callback()));
  REQUIRE(t.run_until([&] { return a.done && b.done && plain.done; }));
  CHECK_FALSE(a.error);
  CHECK(a.reply.is("OK"));
  CHECK(b.error == redis::errc::not_replicated);
  CHECK(b.reply.is("OK"));  // it ran on the master
  CHECK(plain.reply.is("OK"));
  // On the same connection, the plain write came after the durable one's
  // WAIT, which waited wait_timeout for a second replica.
  CHECK(b.at <= plain.at);
  CHECK(one.stats().waits == 1);
  CHECK(one.stats().replies_ok == 1);
  CHECK(two.stats().not_replicated == 1);
  const int master = cluster.master_of(redis::key_slot("{d}"));
  CHECK(cluster.command(master, {"GET", "{d}two"}) == redis::Reply::string("2"));
}
