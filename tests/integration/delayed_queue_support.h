// What the delayed queue's tests share (delayed_queue_test.cpp,
// delayed_order_test.cpp): the two backends (one redis-server, a Redis
// Cluster of six processes), a "node" (its own link and queue on the test
// loop), the deliveries every node records, fast options.
#pragma once

#include <heartwheel/push/delayed_queue.h>
#include <heartwheel/redis/slot.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "redis_test_support.h"

using namespace hwtest;
using namespace std::chrono_literals;
using hwproc::Ms;
namespace push = heartwheel::push;

namespace dqtest {

// Every delivery of every node: id -> how often, and how late.
struct Deliveries {
  std::map<std::string, int> count;
  std::map<std::string, std::string> data;
  std::vector<std::string> in_order;  // the data of every delivery, as they came
  std::vector<std::chrono::milliseconds> lateness;
  int early = 0;

  push::DeliverFunction recorder() {
    return [this](const push::DelayedPush& p) {
      const auto now = push::WallClock::now();
      if (now < p.due) ++early;
      lateness.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(now - p.due));
      ++count[p.id];
      data[p.id] = p.data;
      in_order.push_back(p.data);
    };
  }
  std::size_t total() const {
    std::size_t n = 0;
    for (const auto& [id, c] : count) n += static_cast<std::size_t>(c);
    return n;
  }
  int max_count() const {
    int m = 0;
    for (const auto& [id, c] : count) m = std::max(m, c);
    return m;
  }
};

// The two backends the templated cases run on: where the links go, and the
// size of a key kind (`due`, `data`, `claims`) summed over the partitions.
constexpr const char* kPrefix = "heartwheel:push:";

struct OneRedis {
  RedisServer server;
  redis::ClientOptions link() const { return link_to<redis::ClientOptions>(server); }
  std::int64_t size(const char* command, const std::string& kind, std::size_t partitions = 16) {
    const redis::Partitions tags(partitions);
    std::int64_t n = 0;
    for (std::size_t i = 0; i < partitions; ++i)
      n += server.command({command, kPrefix + tags.braced(i) + kind}).integer();
    return n;
  }
};

struct Cluster {
  RedisCluster cluster;
  redis::ClientOptions link() const { return cluster_link<redis::ClientOptions>(cluster); }
  std::int64_t size(const char* command, const std::string& kind, std::size_t partitions = 16) {
    const redis::Partitions tags(partitions);
    std::int64_t n = 0;
    for (std::size_t i = 0; i < partitions; ++i) {
      const std::string key = kPrefix + tags.braced(i) + kind;
      n += cluster.command(cluster.master_of(redis::key_slot(key)), {command, key}).integer();
    }
    return n;
  }
};

// One "node": its own Redis link and queue on the shared test loop.
struct Node {
  Node(TestLoop& t, const redis::ClientOptions& link, push::DelayedQueueOptions o,
       push::DeliverFunction deliver)
      : client(*t.wheel, link), queue(*t.wheel, client, std::move(o), std::move(deliver)) {
    client.start();
  }
  redis::Client client;
  push::DelayedQueue queue;
};

// Starts both nodes' queues and waits for their first loads.
inline void start_both(TestLoop& t, Node& a, Node& b) {
  a.queue.start();
  b.queue.start();
  REQUIRE(t.run_until([&] { return a.queue.stats().loads > 0 && b.queue.stats().loads > 0; }));
}

inline push::DelayedQueueOptions fast_options() {
  push::DelayedQueueOptions o;
  o.window = 10s;
  o.load_interval = 200ms;
  o.takeover_grace = 500ms;
  o.lease = 1s;
  o.reap_interval = 200ms;
  o.retry_interval = 100ms;
  return o;
}

// Schedules and waits for the callback; returns the push's id.
inline std::string schedule(TestLoop& t, push::DelayedQueue& q, const std::string& channel,
                            const std::string& data, push::WallTime due) {
  bool done = false;
  std::string id;
  REQUIRE_FALSE(q.schedule(channel, data, due, [&](std::error_code ec, const push::DelayedPush& p) {
    CHECK_FALSE(ec);
    done = true;
    id = p.id;
  }));
  REQUIRE(t.run_until([&] { return done; }));
  return id;
}

}  // namespace dqtest

using namespace dqtest;
