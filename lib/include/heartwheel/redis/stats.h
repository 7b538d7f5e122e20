// heartwheel/redis/stats.h - the counters of a Redis link.
//
// One struct for both kinds of link (Client: the command fields;
// Subscriber: the subscription fields; the connection fields for both), so a
// node's figure is the merge of all its links, as net::LoopSnapshot merges
// loops. Client::stats() / Subscriber::stats() fill the gauges when asked;
// the counters only grow. Every command accepted ends in exactly one of
// replies_ok, replies_error, not_replicated, timed_out, failed_disconnected,
// failed_stopped, redirect_errors (or is still in_flight / buffered): none is
// dropped without a count.
//
// A cluster link (ClusterOptions::seeds) reports the merge of its
// connections (one per master it talks to, and the one reading the slot
// map) with the command and subscription fields counted once per command
// and channel as the application sees them, plus the cluster fields; and
// per master, MasterStats (Client::masters(), Subscriber::masters()).
//
// LinkStats::fields() lists every field with its kind and meaning, once:
// merge, to_json and the metric families (write_metrics below) all walk it,
// and a field without a row fails to compile (stats.cpp).
// Threads: plain values, copied out on the link's loop thread.
#pragma once

#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::redis {

struct LinkStats {
  // Gauges, now.
  std::uint64_t links = 1;      // links merged into these figures
  std::uint64_t connected = 0;  // links with an open connection (cluster: connections)
  std::uint64_t in_flight = 0;  // commands sent whose reply has not come (timed-out ones too)
  std::uint64_t buffered = 0;   // commands waiting for a connection
  std::uint64_t buffered_bytes = 0;
  std::uint64_t subscriptions = 0;         // channels + patterns a Subscriber wants
  std::uint64_t active_subscriptions = 0;  // of which Redis confirmed on this connection
  std::uint64_t cluster_masters = 0;       // masters in the slot map (cluster links)

  // The connection.
  std::uint64_t connects = 0;          // connections opened
  std::uint64_t reconnects = 0;        // of which after an earlier one (Redis came back)
  std::uint64_t disconnects = 0;       // connections closed (any reason)
  std::uint64_t connect_failures = 0;  // attempts that failed (refused, connect timeout)
  std::uint64_t pings_sent = 0;
  std::uint64_t pong_timeouts = 0;    // connections closed: Redis went silent (pong_timeout)
  std::uint64_t protocol_errors = 0;  // connections closed: bytes that are not RESP2 / too large
  std::uint64_t setup_errors = 0;     // connections closed: a setup command failed
  std::uint64_t auth_failures = 0;    // connections closed: AUTH refused, or NOAUTH (auth.h)
  std::uint64_t writes = 0;           // batches written (one Connection::write each)
  std::uint64_t callback_exceptions = 0;  // application callbacks that threw (swallowed)

  // Commands (Client).
  std::uint64_t commands = 0;               // accepted by command()
  std::uint64_t sent = 0;                   // written to a connection (resends count again)
  std::uint64_t replies_ok = 0;             // answered with a non-error reply
  std::uint64_t replies_error = 0;          // answered with a Redis error (server_error)
  std::uint64_t timed_out = 0;              // deadline passed first (buffered or in flight)
  std::uint64_t failed_disconnected = 0;    // in flight when the connection dropped
  std::uint64_t failed_stopped = 0;         // pending when stop() was called
  std::uint64_t retried = 0;                // in flight at a drop, resent (CommandOptions::retry)
  std::uint64_t late_replies = 0;           // replies to commands that had timed out (discarded)
  std::uint64_t refused_not_connected = 0;  // command() refused: no connection, no buffer
  std::uint64_t refused_buffer_full = 0;    // command() refused: buffer full
  std::uint64_t refused_queue_full = 0;     // command() refused: write queue at its cap
  std::uint64_t buffered_total = 0;         // commands that waited for a connection
  std::uint64_t script_fallbacks = 0;       // NOSCRIPT answers resent as EVAL
  std::uint64_t waits = 0;                  // WAITs sent after durable writes
  std::uint64_t not_replicated = 0;         // durable writes WAIT found too few replicas for

  // Subscriptions (Subscriber).
  std::uint64_t subscribes = 0;  // channels and patterns asked for by the application
  std::uint64_t unsubscribes = 0;
  std::uint64_t resubscribes = 0;        // channels and patterns subscribed again after a reconnect
  std::uint64_t resubscribe_rounds = 0;  // reconnects after which Redis confirmed all of them
  std::uint64_t messages = 0;            // delivered to on_message
  std::uint64_t stray_messages = 0;      // for a channel no longer wanted (dropped)

  // Redis Cluster.
  std::uint64_t redirects_moved = 0;   // MOVED followed (the slot has a new master)
  std::uint64_t redirects_ask = 0;     // ASK followed (ASKING + the command, once)
  std::uint64_t redirect_errors = 0;   // commands failed with too_many_redirects
  std::uint64_t cluster_retries = 0;   // sent again after CLUSTERDOWN / TRYAGAIN / a lost master
  std::uint64_t slot_map_refreshes = 0;  // slot maps read
  std::uint64_t slot_map_errors = 0;     // slot map reads that failed (the next node is asked)
  std::uint64_t slots_moved = 0;         // slots whose master changed from one map to the next
  std::uint64_t failovers = 0;           // replicas seen promoted to master in the maps
                                         // this link read (lib/src/redis/README.md)
  std::uint64_t channels_moved = 0;      // sharded subscriptions moved to another master

  void merge(const LinkStats& other) noexcept;
  // The fields' table (heartwheel/common/stat_fields.h): JSON keys, kind,
  // Prometheus families (heartwheel_redis_*) and help; lib/src/redis/stats.cpp.
  static StatTable<LinkStats> fields() noexcept;
};

// One JSON object; the keys are the field names above.
std::string to_json(const LinkStats& stats);

// One master of a Redis Cluster, as one cluster link sees it now.
struct MasterStats {
  std::string address;       // "HOST:PORT"
  std::uint64_t slots = 0;   // slots it owns in the link's slot map
  bool connected = false;    // the link's connection to it is open
  std::uint64_t pending = 0; // Client: commands in flight or waiting for it;
                             // Subscriber: channels wanted there
  LinkStats link;            // the counters of the link's connection to it
};

// A JSON array of objects: address, slots, connected, pending, and the
// connection's counters under "link".
std::string to_json(const std::vector<MasterStats>& masters);

// One link's figures for write_metrics, by reference: use it within the call.
struct LinkMetrics {
  std::string_view name;                      // the link label's value
  const LinkStats& stats;                     // e.g. Client::stats(), RedisBrokerStats::link
  std::span<const MasterStats> masters = {};  // Client::masters(), empty: not a cluster
};

// Appends the heartwheel_redis_* families into any sink (metrics::write(out,
// links) for Prometheus): one family per row of LinkStats::fields() (its
// help, gauges as they are named, counters with _total), each with one
// sample per link, labelled link="<name>" (a program's links, e.g. "broker"
// for a RedisBroker's merged Client and Subscriber, "push" for a delayed
// queue's Client). Cluster links add, per master and link:
//   heartwheel_redis_master_connected{link,master}  1 if the connection is open
//   heartwheel_redis_master_slots{link,master}      slots it owns in the map
//   heartwheel_redis_master_pending{link,master}    commands pending there
//                                                   (subscriber: channels)
//   heartwheel_redis_master_disconnects_total{link,master}
// so "which master is down" is one query, and redirects followed (MOVED,
// ASK), slot-map refreshes and failovers seen are the link's families
// heartwheel_redis_redirects_moved_total, _redirects_ask_total,
// _slot_map_refreshes_total, _failovers_total.
// Throws as the sink (TextWriter: std::logic_error if `out` already has one
// of them). Threads: any (each reads a copy). Cost: ~50 samples per link,
// plus 4 per master.
void write_metrics(MetricSink& out, std::span<const LinkMetrics> links);

}  // namespace heartwheel::redis
