// A Redis link's counters (stats.h): their one table of fields
// (LinkStats::fields()), which merge, JSON and the metric families
// (stats_metrics.cpp) walk, and the masters' JSON; LockStats' table.
#include <heartwheel/redis/lock.h>
#include <heartwheel/redis/stats.h>

#include <heartwheel/common/stat_fields.h>

#include <cstddef>

namespace heartwheel::redis {

namespace {
using S = LinkStats;
constexpr auto kCounter = StatKind::counter;
constexpr auto kGauge = StatKind::gauge;  // merged: summed over the links
constexpr StatField<S> kFields[] = {
    {"links", &S::links, kGauge, "heartwheel_redis_links",
     "Redis links merged into these figures."},
    {"connected", &S::connected, kGauge, "heartwheel_redis_connected", "Redis connections open."},
    {"in_flight", &S::in_flight, kGauge, "heartwheel_redis_in_flight",
     "Redis commands sent and not answered."},
    {"buffered", &S::buffered, kGauge, "heartwheel_redis_buffered",
     "Redis commands waiting for a connection."},
    {"buffered_bytes", &S::buffered_bytes, kGauge, "heartwheel_redis_buffered_bytes",
     "bytes of the buffered Redis commands."},
    {"subscriptions", &S::subscriptions, kGauge, "heartwheel_redis_subscriptions",
     "channels and patterns subscribers want."},
    {"active_subscriptions", &S::active_subscriptions, kGauge,
     "heartwheel_redis_active_subscriptions",
     "subscriptions Redis confirmed on the current connections."},
    {"cluster_masters", &S::cluster_masters, kGauge, "heartwheel_redis_cluster_masters",
     "masters in the Redis Cluster slot map."},
    {"connects", &S::connects, kCounter, "heartwheel_redis_connects_total",
     "Redis connections opened."},
    {"reconnects", &S::reconnects, kCounter, "heartwheel_redis_reconnects_total",
     "Redis connections opened again after one."},
    {"disconnects", &S::disconnects, kCounter, "heartwheel_redis_disconnects_total",
     "Redis connections closed."},
    {"connect_failures", &S::connect_failures, kCounter, "heartwheel_redis_connect_failures_total",
     "Redis connection attempts failed."},
    {"pings_sent", &S::pings_sent, kCounter, "heartwheel_redis_pings_sent_total",
     "heartbeat PINGs sent."},
    {"pong_timeouts", &S::pong_timeouts, kCounter, "heartwheel_redis_pong_timeouts_total",
     "Redis connections closed because Redis went silent."},
    {"protocol_errors", &S::protocol_errors, kCounter, "heartwheel_redis_protocol_errors_total",
     "Redis connections closed on bytes that are not RESP2."},
    {"setup_errors", &S::setup_errors, kCounter, "heartwheel_redis_setup_errors_total",
     "Redis connections closed because a setup command failed."},
    {"auth_failures", &S::auth_failures, kCounter, "heartwheel_redis_auth_failures_total",
     "Redis connections closed because Redis refused AUTH or wanted it (NOAUTH)."},
    {"writes", &S::writes, kCounter, "heartwheel_redis_writes_total", "batches written to Redis."},
    {"callback_exceptions", &S::callback_exceptions, kCounter,
     "heartwheel_redis_callback_exceptions_total", "application callbacks that threw."},
    {"commands", &S::commands, kCounter, "heartwheel_redis_commands_total",
     "Redis commands accepted."},
    {"sent", &S::sent, kCounter, "heartwheel_redis_sent_total",
     "Redis commands written (resends again)."},
    {"replies_ok", &S::replies_ok, kCounter, "heartwheel_redis_replies_ok_total",
     "Redis commands answered."},
    {"replies_error", &S::replies_error, kCounter, "heartwheel_redis_replies_error_total",
     "Redis commands answered with an error."},
    {"timed_out", &S::timed_out, kCounter, "heartwheel_redis_timed_out_total",
     "Redis commands past their deadline."},
    {"failed_disconnected", &S::failed_disconnected, kCounter,
     "heartwheel_redis_failed_disconnected_total",
     "Redis commands in flight when their connection dropped."},
    {"failed_stopped", &S::failed_stopped, kCounter, "heartwheel_redis_failed_stopped_total",
     "Redis commands failed by stop()."},
    {"retried", &S::retried, kCounter, "heartwheel_redis_retried_total",
     "Redis commands sent again after a drop."},
    {"late_replies", &S::late_replies, kCounter, "heartwheel_redis_late_replies_total",
     "replies to timed-out commands."},
    {"refused_not_connected", &S::refused_not_connected, kCounter,
     "heartwheel_redis_refused_not_connected_total", "Redis commands refused: not connected."},
    {"refused_buffer_full", &S::refused_buffer_full, kCounter,
     "heartwheel_redis_refused_buffer_full_total", "Redis commands refused: buffer full."},
    {"refused_queue_full", &S::refused_queue_full, kCounter,
     "heartwheel_redis_refused_queue_full_total", "Redis commands refused: write queue full."},
    {"buffered_total", &S::buffered_total, kCounter, "heartwheel_redis_buffered_total",
     "Redis commands that waited for a connection."},
    {"script_fallbacks", &S::script_fallbacks, kCounter, "heartwheel_redis_script_fallbacks_total",
     "NOSCRIPT answers resent as EVAL."},
    {"waits", &S::waits, kCounter, "heartwheel_redis_waits_total",
     "WAITs sent after durable writes."},
    {"not_replicated", &S::not_replicated, kCounter, "heartwheel_redis_not_replicated_total",
     "durable writes too few replicas acknowledged."},
    {"subscribes", &S::subscribes, kCounter, "heartwheel_redis_subscribes_total",
     "subscriptions asked for."},
    {"unsubscribes", &S::unsubscribes, kCounter, "heartwheel_redis_unsubscribes_total",
     "subscriptions given up."},
    {"resubscribes", &S::resubscribes, kCounter, "heartwheel_redis_resubscribes_total",
     "subscriptions made again after a loss."},
    {"resubscribe_rounds", &S::resubscribe_rounds, kCounter,
     "heartwheel_redis_resubscribe_rounds_total",
     "losses after which every subscription was confirmed again."},
    {"messages", &S::messages, kCounter, "heartwheel_redis_messages_total",
     "pub/sub messages delivered."},
    {"stray_messages", &S::stray_messages, kCounter, "heartwheel_redis_stray_messages_total",
     "pub/sub messages for channels no longer wanted."},
    {"redirects_moved", &S::redirects_moved, kCounter, "heartwheel_redis_redirects_moved_total",
     "Redis Cluster MOVED redirects followed."},
    {"redirects_ask", &S::redirects_ask, kCounter, "heartwheel_redis_redirects_ask_total",
     "Redis Cluster ASK redirects followed."},
    {"redirect_errors", &S::redirect_errors, kCounter, "heartwheel_redis_redirect_errors_total",
     "Redis commands failed after too many redirects."},
    {"cluster_retries", &S::cluster_retries, kCounter, "heartwheel_redis_cluster_retries_total",
     "Redis commands sent again after CLUSTERDOWN, TRYAGAIN or a lost master."},
    {"slot_map_refreshes", &S::slot_map_refreshes, kCounter,
     "heartwheel_redis_slot_map_refreshes_total", "Redis Cluster slot maps read."},
    {"slot_map_errors", &S::slot_map_errors, kCounter, "heartwheel_redis_slot_map_errors_total",
     "Redis Cluster slot map reads that failed."},
    {"slots_moved", &S::slots_moved, kCounter, "heartwheel_redis_slots_moved_total",
     "Redis Cluster slots seen moving to another master."},
    {"failovers", &S::failovers, kCounter, "heartwheel_redis_failovers_total",
     "Redis Cluster replicas seen promoted to master."},
    {"channels_moved", &S::channels_moved, kCounter, "heartwheel_redis_channels_moved_total",
     "sharded subscriptions moved to another master."},
};
// Every field is in the table (a new field without a row fails to compile).
static_assert(stat_fields_cover(StatTable<S>(kFields), 0), "a LinkStats field without a row");
}  // namespace

StatTable<LinkStats> LinkStats::fields() noexcept { return kFields; }

namespace {
using L = LockStats;
constexpr StatField<L> kLockFields[] = {
    {"attempts", &L::attempts, kCounter, "", ""}, {"acquired", &L::acquired, kCounter, "", ""},
    {"renewals", &L::renewals, kCounter, "", ""}, {"lost", &L::lost, kCounter, "", ""},
    {"released", &L::released, kCounter, "", ""}, {"held", &L::held, kGauge, "", ""},
    {"waiting", &L::waiting, kGauge, "", ""},
};
static_assert(stat_fields_cover(StatTable<L>(kLockFields), 0), "a LockStats field without a row");
}  // namespace

StatTable<LockStats> LockStats::fields() noexcept { return kLockFields; }

void LinkStats::merge(const LinkStats& other) noexcept {
  merge_stat_fields(fields(), *this, other);
}

std::string to_json(const LinkStats& stats) {
  std::string out = "{";
  append_stat_fields_json(out, LinkStats::fields(), stats);
  out += '}';
  return out;
}

std::string to_json(const std::vector<MasterStats>& masters) {
  std::string out = "[";
  for (const MasterStats& m : masters) {
    if (out.size() > 1) out += ',';
    out += "{\"address\":";
    append_json_string(out, m.address);
    out += ",\"slots\":" + std::to_string(m.slots);
    out += m.connected ? ",\"connected\":true" : ",\"connected\":false";
    out += ",\"pending\":" + std::to_string(m.pending);
    out += ",\"link\":" + to_json(m.link) + '}';
  }
  out += ']';
  return out;
}

}  // namespace heartwheel::redis
