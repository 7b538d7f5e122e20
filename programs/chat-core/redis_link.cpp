// See redis_link.h.
#include "redis_link.h"

#include <heartwheel/net/address.h>

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <vector>

namespace chat {

namespace {

heartwheel::net::HostPort parse_address(const std::string& flag, const std::string& text) {
  heartwheel::net::HostPort where;
  try {
    where = heartwheel::net::parse_host_port(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
  if (where.port == 0) throw std::invalid_argument(flag + " needs a port: " + text);
  return where;
}

}  // namespace

CLI::Option* add_pubsub_prefix_flag(CLI::App& app, std::string& prefix, const std::string& who) {
  return app
      .add_option("--pubsub-prefix", prefix,
                  "prefix of the Redis keys and channels of the pub/sub channels (streams, "
                  "offsets, presence): heartwheel-chat and heartwheel-push nodes with the same "
                  "prefix on one Redis share channels (the default is the same in both). " +
                      who)
      ->capture_default_str();
}

void add_redis_cluster_flags(CLI::App& app, RedisClusterFlags& f) {
  app.add_option("--redis-cluster", f.cluster,
                 "HOST:PORT[,HOST:PORT...]: seed nodes of a Redis Cluster (7.0+) used in place of "
                 "one redis-server (exclusive with --redis): the slot map is read from them, "
                 "publications go out with SPUBLISH, keys are spread over every master, and a "
                 "master's failover is followed");
  app.add_option("--redis-wait-replicas", f.wait_replicas,
                 "acknowledge a write (a publish reply, a 202 of POST /publish) only once N "
                 "replicas have it (Redis WAIT, 1 s timeout; fewer: the error unavailable, a 503). "
                 "0: acknowledged when the master has it (a failover may lose it)")
      ->capture_default_str();
}

bool redis_wanted(const std::string& redis, const RedisClusterFlags& f) noexcept {
  return !redis.empty() || !f.cluster.empty();
}

void apply_redis_target(const std::string& redis, const RedisClusterFlags& f,
                        heartwheel::redis::ClientOptions& o) {
  if (!redis.empty() && !f.cluster.empty())
    throw std::invalid_argument("--redis and --redis-cluster are exclusive: give one");
  if (redis.empty() && f.cluster.empty())
    throw std::invalid_argument("--redis HOST:PORT or --redis-cluster HOST:PORT,... is required");
  if (f.wait_replicas < 0) throw std::invalid_argument("--redis-wait-replicas must be >= 0");
  o.wait_replicas = f.wait_replicas;
  if (!redis.empty()) {
    const heartwheel::net::HostPort where = parse_address("--redis", redis);
    o.connector.host = where.host;
    o.connector.port = where.port;
    return;
  }
  o.cluster.seeds.clear();
  std::size_t from = 0;
  while (from <= f.cluster.size()) {
    std::size_t comma = f.cluster.find(',', from);
    if (comma == std::string::npos) comma = f.cluster.size();
    const std::string seed = f.cluster.substr(from, comma - from);
    if (seed.empty()) throw std::invalid_argument("--redis-cluster: an empty seed in " + f.cluster);
    (void)parse_address("--redis-cluster", seed);
    o.cluster.seeds.push_back(seed);
    from = comma + 1;
  }
}

void write_redis_metrics(heartwheel::metrics::TextWriter& out,
                         const heartwheel::pubsub::RedisBrokerStats& broker,
                         std::span<const heartwheel::redis::LinkMetrics> extra) {
  heartwheel::redis::LinkStats subscriber{.links = 0};
  for (const heartwheel::redis::MasterStats& m : broker.subscriber_masters)
    subscriber.merge(m.link);
  std::vector<heartwheel::redis::LinkMetrics> links{{"broker", broker.link, broker.masters}};
  if (!broker.subscriber_masters.empty())
    links.push_back({"broker_subscriber", subscriber, broker.subscriber_masters});
  for (const heartwheel::redis::LinkMetrics& l : extra) links.push_back(l);
  heartwheel::metrics::write(out, links);
}

}  // namespace chat
