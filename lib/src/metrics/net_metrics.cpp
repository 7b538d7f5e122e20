// See heartwheel/metrics/net_metrics.h. Names follow Prometheus' conventions:
// base units (seconds, bytes), counters end in _total, one family per
// quantity with labels for its parts (reason, kind).
#include <heartwheel/metrics/durations.h>
#include <heartwheel/metrics/net_metrics.h>
#include <heartwheel/metrics/stat_families.h>

#include "close_reasons.h"

namespace heartwheel::metrics {

static_assert(LoopWheel::lag_bucket_bound(5) == DurationHistogram<LoopWheel::kLagBuckets>::bound(5),
              "the loop's lag histogram must have the library's duration buckets");

namespace {

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// The counters' families from net::NetStats::fields() (lib/src/net/stats.cpp),
// closes by reason and deadline events by kind after the accepted count.
void write_connections(TextWriter& out, const net::NetStats& n) {
  const auto [open_accepted, rest] =
      split_after(net::NetStats::fields(), "heartwheel_connections_accepted_total");
  write_families(out, open_accepted, n);
  write_close_reasons(out, "heartwheel_connections_closed_total",
                      "Connections closed, by reason (net::CloseReason).", n.closed_by_reason);
  out.family("heartwheel_idle_events_total", Type::counter,
             "Deadline events delivered to handlers, by deadline slot (idle timeouts, "
             "protocol deadlines).");
  for (std::size_t i = 0; i < n.idle_events.size(); ++i) {
    const auto kind = static_cast<net::Deadline>(i);
    // write_stall is handled inside net, never delivered.
    if (!net::is_named(kind) || kind == net::Deadline::write_stall) continue;
    out.sample(n.idle_events[i], {{"kind", net::to_string(kind)}});
  }
  write_families(out, rest, n);
}

void write_timers(TextWriter& out, const net::LoopSnapshot& s) {
  out.family("heartwheel_timer_lateness_seconds", Type::histogram,
             "How late connection timers fired: fire time minus the deadline they were armed for "
             "(every wake-up, lazy re-arms included).");
  write_duration_histogram(out, s.net.timer_lateness);
  out.gauge("heartwheel_wheel_entries", "Timer entries armed in the timing wheels now.",
            s.wheel_entries);
  write_families(out, WheelStats::fields(), s.wheel);
}

void write_loop(TextWriter& out, const net::LoopSnapshot& s) {
  out.gauge("heartwheel_loops", "Event loops whose counters this scrape merges.", s.loops);
  // The table's families with the hand-written ones in the exposition's
  // order: iterations, the lag histogram, stalls, their seconds, the rest.
  const auto [through_iterations, after_iterations] =
      split_after(LoopWheel::LoopStats::fields(), "heartwheel_loop_iterations_total");
  const auto [through_stalls, rest] = split_after(after_iterations, "heartwheel_loop_stalls_total");
  write_families(out, through_iterations, s.loop);
  out.family("heartwheel_loop_lag_seconds", Type::histogram,
             "Time each loop iteration spent outside the poll: callbacks before and after it, "
             "plus any poll overrun.");
  write_duration_buckets(out, s.loop.lag_buckets, s.loop.lag_total);
  write_families(out, through_stalls, s.loop);
  out.family("heartwheel_loop_stall_seconds_total", Type::counter,
             "Lag of the stalled iterations, summed.");
  out.sample(seconds(s.loop.stall_total));
  write_families(out, rest, s.loop);
}

// Written whether or not the server reads PROXY headers or has overload
// protection on: zeros (and a scale of 1) say "off or never triggered", and
// the families exist from the first scrape for rate() and alerts.
void write_protection(TextWriter& out, const net::NetStats& n) {
  write_families(out, net::ProxyProtocolStats::fields(), n.proxy);
  out.gauge("heartwheel_overload_idle_scale",
            "Factor applied to idle timeouts under overload (1: none); the smallest over the "
            "server's loops.",
            n.overload.idle_scale);
  write_families(out, net::OverloadStats::fields(), n.overload);
}

}  // namespace

void write(TextWriter& out, const net::LoopSnapshot& s) {
  write_connections(out, s.net);
  write_timers(out, s);
  write_loop(out, s);
  write_protection(out, s.net);
}

}  // namespace heartwheel::metrics
