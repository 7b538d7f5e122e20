// EndpointStats' field table (heartwheel/common/stat_fields.h), merge and
// the JSON array of endpoints (pool_stats.h).
#include <heartwheel/net/pool_stats.h>

namespace heartwheel::net {

namespace {
using S = EndpointStats;
constexpr auto kCounter = StatKind::counter;
constexpr auto kGauge = StatKind::gauge;
constexpr std::string_view kCalls = "heartwheel_pool_calls_total";

constexpr StatField<S> kFields[] = {
    {"calls_ok", &S::calls_ok, kCounter, kCalls, "Calls a pool finished, by outcome.", "outcome",
     "ok"},
    {"calls_failed", &S::calls_failed, kCounter, kCalls, "", "outcome", "failed"},
    {"calls_timed_out", &S::calls_timed_out, kCounter, kCalls, "", "outcome", "timed_out"},
    {"ejections", &S::ejections, kCounter, "heartwheel_pool_ejections_total",
     "Endpoints ejected (consecutive failures, a heartbeat timeout, a failed probe)."},
    {"ejections_skipped", &S::ejections_skipped, kCounter,
     "heartwheel_pool_ejections_skipped_total",
     "Ejections refused by max_ejection_percent: the endpoint stayed in use."},
    {"probes", &S::probes, kCounter, "heartwheel_pool_probes_total",
     "Probes of ejected endpoints whose ejection time was over."},
    {"readmissions", &S::readmissions, kCounter, "heartwheel_pool_readmissions_total",
     "Probes answered: the endpoint was taken back."},
    {"connects", &S::connects, kCounter, "heartwheel_pool_connects_total",
     "Connections a pool opened."},
    {"reconnects", &S::reconnects, kCounter, "heartwheel_pool_reconnects_total",
     "Pool connections opened again after an earlier one of theirs closed."},
    {"connect_failures", &S::connect_failures, kCounter, "heartwheel_pool_connect_failures_total",
     "Connect attempts refused or timed out."},
    {"disconnects", &S::disconnects, kCounter, "heartwheel_pool_disconnects_total",
     "Pool connections closed, for any reason."},
    {"heartbeat_timeouts", &S::heartbeat_timeouts, kCounter,
     "heartwheel_pool_heartbeat_timeouts_total",
     "Pool connections closed because pings went unanswered (pong_timeout)."},
    {"pings_sent", &S::pings_sent, kCounter, "heartwheel_pool_pings_sent_total",
     "Heartbeat and probe pings a pool sent."},
    {"in_flight", &S::in_flight, kGauge, "heartwheel_pool_calls_in_flight",
     "Calls acquired from a pool and not released yet."},
    {"open", &S::open, kGauge, "heartwheel_pool_connections_open", "Open pool connections."},
    {"connections", &S::connections, kGauge, "heartwheel_pool_connections",
     "Connections a pool keeps, open or not."},
};
static_assert(stat_fields_cover(StatTable<S>(kFields), 0));
}  // namespace

StatTable<EndpointStats> EndpointStats::fields() noexcept { return kFields; }

void EndpointStats::merge(const EndpointStats& o) noexcept {
  merge_stat_fields(fields(), *this, o);
}

std::string to_json(const std::vector<EndpointInfo>& endpoints) {
  std::string out = "[";
  for (const EndpointInfo& e : endpoints) {
    if (out.size() > 1) out += ',';
    out += "{\"address\":";
    append_json_string(out, e.address);
    out += ",\"state\":\"";
    out += to_string(e.state);
    out += '"';
    append_stat_fields_json(out, EndpointStats::fields(), e.stats);
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace heartwheel::net
