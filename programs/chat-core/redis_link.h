// The Redis link of heartwheel-chat and heartwheel-push: the flags both
// share, and the Prometheus families of their links.
//
// Flags: where
// Redis is (one redis-server with --redis, or a Redis Cluster with
// --redis-cluster, exclusive) and --redis-wait-replicas. Each program
// registers --redis itself (its help differs: optional in chat, required in
// push); these two are registered and applied here, once.
//
//   chat::RedisClusterFlags rc;
//   chat::add_redis_cluster_flags(app, rc);
//   ... parse ...
//   if (chat::redis_wanted(redis, rc))                     // either flag given
//     chat::apply_redis_target(redis, rc, client_options);  // std::invalid_argument
//                                                           // names the flag
// The pub/sub prefix: --pubsub-prefix (default kDefaultPubsubPrefix, "hw:")
// is the prefix of the broker's keys and Redis channels (streams, offsets,
// presence) in BOTH programs, so that heartwheel-push and heartwheel-chat
// started on one Redis with their defaults share channels (issue 34): a
// push reaches the chat's subscribers. The old names stay as aliases:
// heartwheel-chat's --redis-prefix (deprecated, a warning), and
// heartwheel-push's --key-prefix, which without --pubsub-prefix still puts
// the pub/sub keys under KEY_PREFIX "pubsub:" as before (a note says so).
//
// Metrics: write_redis_metrics(out, broker.stats(), extra) writes the
// heartwheel_redis_* families (heartwheel/redis/stats.h: write_metrics) of the
// broker, link="broker" (its Client and Subscriber merged; per master of a
// cluster, the Client's connections) and, on a cluster,
// link="broker_subscriber" (the Subscriber's connections per master, its
// counters summed over them), then the `extra` links (push: its nodes').
//
// Threads: the flags from main() only; write_redis_metrics from any.
#pragma once

#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/stats.h>

#include <span>
#include <string>

namespace CLI {
class App;
class Option;
}

namespace chat {

struct RedisClusterFlags {
  std::string cluster;     // --redis-cluster HOST:PORT[,HOST:PORT...]: seed nodes
  int wait_replicas = 0;  // --redis-wait-replicas N
};

// Registers --redis-cluster and --redis-wait-replicas.
void add_redis_cluster_flags(CLI::App& app, RedisClusterFlags& flags);

// The default of --pubsub-prefix in both programs.
inline constexpr const char* kDefaultPubsubPrefix = "hw:";

// Registers --pubsub-prefix into `prefix`, which holds the default
// (kDefaultPubsubPrefix) until the flag is given. `who` ends its help: what
// else shares it in this program (a deprecated alias).
CLI::Option* add_pubsub_prefix_flag(CLI::App& app, std::string& prefix, const std::string& who);

// True when --redis (`redis`, the program's own flag) or --redis-cluster was
// given.
bool redis_wanted(const std::string& redis, const RedisClusterFlags& flags) noexcept;

// Writes the target into `options`: connector.host/port from `redis`
// (HOST:PORT, port required), or cluster.seeds from --redis-cluster (each
// seed HOST:PORT), and wait_replicas (WAIT's timeout: the link's default,
// ClientOptions::wait_timeout). Throws std::invalid_argument naming the flag:
// both given, neither, a bad address, a negative N.
void apply_redis_target(const std::string& redis, const RedisClusterFlags& flags,
                        heartwheel::redis::ClientOptions& options);

// The broker's families and `extra`'s, each family once. Throws
// std::logic_error if `out` already has them.
void write_redis_metrics(heartwheel::metrics::TextWriter& out,
                         const heartwheel::pubsub::RedisBrokerStats& broker,
                         std::span<const heartwheel::redis::LinkMetrics> extra = {});

}  // namespace chat
