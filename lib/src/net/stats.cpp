// The net counters' field tables (heartwheel/common/stat_fields.h) and their
// merges (stats.h). The JSON keys are lib/src/net/README.md's, the
// Prometheus names and help lib/src/metrics/README.md's. The members of other
// shapes (per-reason and per-kind arrays, the lateness histogram and maximum,
// the overload scale merged by min) are merged here and written by
// stats_json.cpp and stats_metrics.cpp.
#include <heartwheel/net/stats.h>

#include <algorithm>

namespace heartwheel::net {

namespace {
constexpr auto kCounter = StatKind::counter;
constexpr auto kGauge = StatKind::gauge;

constexpr StatField<NetStats> kNetFields[] = {
    {"connections_current", &NetStats::current, kGauge, "heartwheel_connections_open",
     "Connections open now."},
    {"connections_accepted", &NetStats::accepted, kCounter,
     "heartwheel_connections_accepted_total",
     "Connections accepted (including those refused at once for a limit)."},
    {"connections_peak", &NetStats::peak, kGauge, "", ""},  // merged: the sum of the peaks
    {"accept_errors", &NetStats::accept_errors, kCounter, "heartwheel_accept_errors_total",
     "Failed accepts."},
    {"fd_exhausted", &NetStats::fd_exhausted, kCounter, "heartwheel_accept_fd_exhausted_total",
     "Accepts that failed with EMFILE/ENFILE after libuv's reserve descriptor was used."},
    {"accept_pauses", &NetStats::accept_pauses, kCounter, "heartwheel_accept_pauses_total",
     "Times accepting stopped for a while because descriptors ran out."},
    {"accept_deferrals", &NetStats::accept_deferrals, kCounter, "heartwheel_accept_deferrals_total",
     "Loop turns that accepted their accept_batch; the rest waited for the next turn."},
    {"connect_failures", &NetStats::connect_failures, kCounter, "", ""},  // client side
    {"handshakes_completed", &NetStats::handshakes_completed, kCounter,
     "heartwheel_handshakes_completed_total",
     "Transport (TLS) handshakes completed, resumed ones included; failed ones are "
     "heartwheel_connections_closed_total{reason=\"tls_...\"}."},
    {"handshakes_resumed", &NetStats::handshakes_resumed, kCounter,
     "heartwheel_handshakes_resumed_total",
     "Of the completed transport (TLS) handshakes, those that resumed a session (a ticket)."},
    {"bytes_read", &NetStats::bytes_read, kCounter, "heartwheel_bytes_read_total",
     "Bytes read from connections."},
    {"bytes_written", &NetStats::bytes_written, kCounter, "heartwheel_bytes_written_total",
     "Bytes written to connections."},
    {"bytes_dropped", &NetStats::bytes_dropped, kCounter, "heartwheel_bytes_dropped_total",
     "Bytes refused by a write queue's cap or still queued when their connection closed."},
    {"write_queue_bytes", &NetStats::write_queue_bytes, kGauge, "heartwheel_write_queue_bytes",
     "Bytes queued in connections' write queues, not yet completely written."},
    {"unwritable_events", &NetStats::unwritable_events, kCounter,
     "heartwheel_unwritable_events_total",
     "Times a connection's write queue crossed its high watermark."},
    {"read_pauses", &NetStats::read_pauses, kCounter, "heartwheel_read_pauses_total",
     "Times reading from a slow reader paused until its queue drained."},
    {"handler_exceptions", &NetStats::handler_exceptions, kCounter,
     "heartwheel_handler_exceptions_total",
     "Exceptions thrown by connection handlers (each closed its connection)."},
};
static_assert(stat_fields_cover(
    StatTable<NetStats>(kNetFields),
    sizeof(NetStats::closed_by_reason) + sizeof(NetStats::idle_events) +
        sizeof(NetStats::timer_lateness) + sizeof(NetStats::timer_lateness_max) +
        sizeof(ProxyProtocolStats) + sizeof(OverloadStats)));

using P = ProxyProtocolStats;
constexpr std::string_view kProxyErrors = "heartwheel_proxy_header_errors_total";
constexpr StatField<P> kProxyFields[] = {
    {"v1", &P::v1, kCounter, "heartwheel_proxy_headers_total",
     "Complete PROXY protocol headers read, by version.", "version", "1"},
    {"v2", &P::v2, kCounter, "heartwheel_proxy_headers_total", "", "version", "2"},
    {"local", &P::local, kCounter, "heartwheel_proxy_local_headers_total",
     "Of the v2 headers, LOCAL ones (health checks: the socket's own addresses kept)."},
    {"invalid", &P::invalid, kCounter, kProxyErrors,
     "Connections closed for their PROXY header: malformed or cut short (invalid), not complete "
     "in time (timeout), from a source outside --proxy-protocol-from (untrusted).",
     "cause", "invalid"},
    {"timeouts", &P::timeouts, kCounter, kProxyErrors, "", "cause", "timeout"},
    {"untrusted", &P::untrusted, kCounter, kProxyErrors, "", "cause", "untrusted"},
};
static_assert(stat_fields_cover(StatTable<P>(kProxyFields), 0));

using O = OverloadStats;
constexpr StatField<O> kOverloadFields[] = {
    {"scale_changes", &O::scale_changes, kCounter, "heartwheel_overload_scale_changes_total",
     "Times the overload idle-timeout scale moved."},
    {"sweeps", &O::sweeps, kCounter, "heartwheel_overload_sweeps_total",
     "Overload sweeper wake-ups (re-arming the idlest connections at a new scale)."},
    {"swept", &O::swept, kCounter, "heartwheel_overload_swept_total",
     "Connections whose idle deadline the overload sweeper re-armed."},
    {"activity_moves", &O::activity_moves, kCounter, "heartwheel_overload_activity_moves_total",
     "Moves of a connection to the front of the activity order (overload tracking)."},
    {"drop_probes", &O::drop_probes, kCounter, "heartwheel_overload_drop_probes_total",
     "Connections looked at to find the idlest to drop at the connection limit."},
};
// idle_scale (a double, merged by min) is written by hand.
static_assert(stat_fields_cover(StatTable<O>(kOverloadFields), sizeof(O::idle_scale)));
}  // namespace

StatTable<NetStats> NetStats::fields() noexcept { return kNetFields; }
StatTable<ProxyProtocolStats> ProxyProtocolStats::fields() noexcept { return kProxyFields; }
StatTable<OverloadStats> OverloadStats::fields() noexcept { return kOverloadFields; }

void NetStats::merge(const NetStats& o) noexcept {
  merge_stat_fields(fields(), *this, o);
  for (std::size_t i = 0; i < closed_by_reason.size(); ++i)
    closed_by_reason[i] += o.closed_by_reason[i];
  for (std::size_t i = 0; i < idle_events.size(); ++i) idle_events[i] += o.idle_events[i];
  timer_lateness.merge(o.timer_lateness);
  timer_lateness_max = std::max(timer_lateness_max, o.timer_lateness_max);
  proxy.merge(o.proxy);
  overload.merge(o.overload);
}

void ProxyProtocolStats::merge(const ProxyProtocolStats& o) noexcept {
  merge_stat_fields(fields(), *this, o);
}

void OverloadStats::merge(const OverloadStats& o) noexcept {
  idle_scale = std::min(idle_scale, o.idle_scale);
  merge_stat_fields(fields(), *this, o);
}

}  // namespace heartwheel::net
