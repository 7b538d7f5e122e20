// net's metric families (heartwheel/net/stats.h: write_metrics), written into
// any heartwheel::MetricSink (the metrics layer's TextWriter for Prometheus).
// Names follow Prometheus' conventions: base units (seconds, bytes),
// counters end in _total, one family per quantity with labels for its parts
// (reason, kind). Every family, its type, labels and meaning:
// lib/src/metrics/README.md.
#include <heartwheel/common/metric_families.h>
#include <heartwheel/net/stats.h>

namespace heartwheel::net {

static_assert(LoopWheel::lag_bucket_bound(5) == DurationHistogram<LoopWheel::kLagBuckets>::bound(5),
              "the loop's lag histogram must have the library's duration buckets");

namespace {

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// The counters' families from NetStats::fields() (stats.cpp), closes by
// reason and deadline events by kind after the accepted count.
void write_connections(MetricSink& out, const NetStats& n) {
  const auto [open_accepted, rest] =
      split_after(NetStats::fields(), "heartwheel_connections_accepted_total");
  write_stat_families(out, open_accepted, n);
  write_close_reasons(out, "heartwheel_connections_closed_total",
                      "Connections closed, by reason (net::CloseReason).", n.closed_by_reason);
  out.family("heartwheel_idle_events_total", MetricType::counter,
             "Deadline events delivered to handlers, by deadline slot (idle timeouts, "
             "protocol deadlines).");
  for (std::size_t i = 0; i < n.idle_events.size(); ++i) {
    const auto kind = static_cast<Deadline>(i);
    // write_stall is handled inside net, never delivered.
    if (!is_named(kind) || kind == Deadline::write_stall) continue;
    out.sample(n.idle_events[i], {{"kind", to_string(kind)}});
  }
  write_stat_families(out, rest, n);
}

void write_timers(MetricSink& out, const LoopSnapshot& s) {
  out.family("heartwheel_timer_lateness_seconds", MetricType::histogram,
             "How late connection timers fired: fire time minus the deadline they were armed for "
             "(every wake-up, lazy re-arms included).");
  write_duration_histogram(out, s.net.timer_lateness);
  out.gauge("heartwheel_wheel_entries", "Timer entries armed in the timing wheels now.",
            s.wheel_entries);
  write_stat_families(out, WheelStats::fields(), s.wheel);
}

void write_loop(MetricSink& out, const LoopSnapshot& s) {
  out.gauge("heartwheel_loops", "Event loops whose counters this scrape merges.", s.loops);
  // The table's families with the hand-written ones in the exposition's
  // order: iterations, the lag histogram, stalls, their seconds, the rest.
  const auto [through_iterations, after_iterations] =
      split_after(LoopWheel::LoopStats::fields(), "heartwheel_loop_iterations_total");
  const auto [through_stalls, rest] = split_after(after_iterations, "heartwheel_loop_stalls_total");
  write_stat_families(out, through_iterations, s.loop);
  out.family("heartwheel_loop_lag_seconds", MetricType::histogram,
             "Time each loop iteration spent outside the poll: callbacks before and after it, "
             "plus any poll overrun.");
  write_duration_buckets(out, s.loop.lag_buckets, s.loop.lag_total);
  write_stat_families(out, through_stalls, s.loop);
  out.family("heartwheel_loop_stall_seconds_total", MetricType::counter,
             "Lag of the stalled iterations, summed.");
  out.sample(seconds(s.loop.stall_total));
  write_stat_families(out, rest, s.loop);
}

// Written whether or not the server reads PROXY headers or has overload
// protection on: zeros (and a scale of 1) say "off or never triggered", and
// the families exist from the first scrape for rate() and alerts.
void write_protection(MetricSink& out, const NetStats& n) {
  write_stat_families(out, ProxyProtocolStats::fields(), n.proxy);
  out.gauge("heartwheel_overload_idle_scale",
            "Factor applied to idle timeouts under overload (1: none); the smallest over the "
            "server's loops.",
            n.overload.idle_scale);
  write_stat_families(out, OverloadStats::fields(), n.overload);
}

}  // namespace

void write_close_reasons(MetricSink& out, std::string_view name, std::string_view help,
                         const CloseReasonCounts& closed) {
  out.family(name, MetricType::counter, help);
  for (std::size_t i = 0; i < closed.size(); ++i) {
    const auto reason = static_cast<CloseReason>(i);
    if (is_named(reason)) out.sample(closed[i], {{"reason", to_string(reason)}});
  }
}

void write_metrics(MetricSink& out, const LoopSnapshot& s) {
  write_connections(out, s.net);
  write_timers(out, s);
  write_loop(out, s);
  write_protection(out, s.net);
}

}  // namespace heartwheel::net
