// heartwheel/metrics/redis_metrics.h - the Redis links' counters as
// Prometheus metric families (heartwheel_redis_*).
//
// One family per field of redis::LinkStats (kLinkStatsFields, the table in
// heartwheel/redis/stats.h: its help lines, gauges as they are named,
// counters with _total), each with one sample per link, labelled
// link="<name>" (a program's links, e.g. "broker" for a RedisBroker's
// merged Client and Subscriber, "push" for a delayed queue's Client).
// Cluster links add, per master and link:
//   heartwheel_redis_master_connected{link,master}  1 if the connection is open
//   heartwheel_redis_master_slots{link,master}      slots it owns in the map
//   heartwheel_redis_master_pending{link,master}    commands pending there
//                                                   (subscriber: channels)
//   heartwheel_redis_master_disconnects_total{link,master}
// so "which master is down" is one query, and redirects followed (MOVED,
// ASK), slot-map refreshes and failovers seen are the link's families
// heartwheel_redis_redirects_moved_total, _redirects_ask_total,
// _slot_map_refreshes_total, _failovers_total.
//
// Only the redis layer's header is used (plain structs, an inline table):
// this adds no link dependency (no hiredis) to the metrics layer.
// Threads: any (each reads a copy). Cost: ~50 samples per link, plus 4 per
// master.
#pragma once

#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/redis/stats.h>

#include <span>
#include <string_view>

namespace heartwheel::metrics {

struct RedisLink {
  std::string_view name;                     // the link label's value
  const redis::LinkStats& stats;             // e.g. Client::stats(), RedisBrokerStats::link
  std::span<const redis::MasterStats> masters = {};  // Client::masters(), empty: not a cluster
};

// Appends the families, one sample per link in each. Throws
// std::logic_error if `out` already has one of them.
void write(TextWriter& out, std::span<const RedisLink> links);

}  // namespace heartwheel::metrics
