// See heartwheel/metrics/net_metrics.h. Names follow Prometheus' conventions:
// base units (seconds, bytes), counters end in _total, one family per
// quantity with labels for its parts (reason, kind).
#include <heartwheel/metrics/durations.h>
#include <heartwheel/metrics/net_metrics.h>

#include "close_reasons.h"

namespace heartwheel::metrics {

static_assert(LoopWheel::lag_bucket_bound(5) == DurationHistogram<LoopWheel::kLagBuckets>::bound(5),
              "the loop's lag histogram must have the library's duration buckets");

namespace {

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

void write_connections(TextWriter& out, const net::NetStats& n) {
  out.gauge("heartwheel_connections_open", "Connections open now.", n.current);
  out.counter("heartwheel_connections_accepted_total",
              "Connections accepted (including those refused at once for a limit).", n.accepted);
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
  out.counter("heartwheel_accept_errors_total", "Failed accepts.", n.accept_errors);
  out.counter("heartwheel_accept_fd_exhausted_total",
              "Accepts that failed with EMFILE/ENFILE after libuv's reserve descriptor was used.",
              n.fd_exhausted);
  out.counter("heartwheel_accept_pauses_total",
              "Times accepting stopped for a while because descriptors ran out.", n.accept_pauses);
  out.counter("heartwheel_accept_deferrals_total",
              "Loop turns that accepted their accept_batch; the rest waited for the next turn.",
              n.accept_deferrals);
}

void write_io(TextWriter& out, const net::NetStats& n) {
  out.counter("heartwheel_bytes_read_total", "Bytes read from connections.", n.bytes_read);
  out.counter("heartwheel_bytes_written_total", "Bytes written to connections.", n.bytes_written);
  out.counter("heartwheel_bytes_dropped_total",
              "Bytes refused by a write queue's cap or still queued when their connection closed.",
              n.bytes_dropped);
  out.gauge("heartwheel_write_queue_bytes",
            "Bytes queued in connections' write queues, not yet completely written.",
            n.write_queue_bytes);
  out.counter("heartwheel_unwritable_events_total",
              "Times a connection's write queue crossed its high watermark.", n.unwritable_events);
  out.counter("heartwheel_read_pauses_total",
              "Times reading from a slow reader paused until its queue drained.", n.read_pauses);
  out.counter("heartwheel_handler_exceptions_total",
              "Exceptions thrown by connection handlers (each closed its connection).",
              n.handler_exceptions);
}

void write_timers(TextWriter& out, const net::LoopSnapshot& s) {
  out.family("heartwheel_timer_lateness_seconds", Type::histogram,
             "How late connection timers fired: fire time minus the deadline they were armed for "
             "(every wake-up, lazy re-arms included).");
  write_duration_histogram(out, s.net.timer_lateness);
  out.gauge("heartwheel_wheel_entries", "Timer entries armed in the timing wheels now.",
            s.wheel_entries);
  out.counter("heartwheel_wheel_fired_total", "Timing wheel entries that fired.", s.wheel.fired);
}

void write_loop(TextWriter& out, const net::LoopSnapshot& s) {
  out.gauge("heartwheel_loops", "Event loops whose counters this scrape merges.", s.loops);
  out.counter("heartwheel_loop_iterations_total", "Event loop iterations.", s.loop.iterations);
  out.family("heartwheel_loop_lag_seconds", Type::histogram,
             "Time each loop iteration spent outside the poll: callbacks before and after it, "
             "plus any poll overrun.");
  write_duration_buckets(out, s.loop.lag_buckets, s.loop.lag_total);
  out.counter("heartwheel_loop_stalls_total",
              "Loop iterations whose lag reached the stall threshold.", s.loop.stalls);
  out.family("heartwheel_loop_stall_seconds_total", Type::counter,
             "Lag of the stalled iterations, summed.");
  out.sample(seconds(s.loop.stall_total));
  out.counter("heartwheel_loop_expiries_deferred_total",
              "Iterations whose expiry waited for one more poll after a stall.",
              s.loop.expiries_deferred);
  out.counter("heartwheel_loop_budget_exhausted_total",
              "Iterations that ran out of expiry budget with entries left to fire.",
              s.loop.budget_exhausted);
}

// Written whether or not the server reads PROXY headers or has overload
// protection on: zeros (and a scale of 1) say "off or never triggered", and
// the families exist from the first scrape for rate() and alerts.
void write_protection(TextWriter& out, const net::NetStats& n) {
  out.family("heartwheel_proxy_headers_total", Type::counter,
             "Complete PROXY protocol headers read, by version.");
  out.sample(n.proxy.v1, {{"version", "1"}});
  out.sample(n.proxy.v2, {{"version", "2"}});
  out.counter("heartwheel_proxy_local_headers_total",
              "Of the v2 headers, LOCAL ones (health checks: the socket's own addresses kept).",
              n.proxy.local);
  out.family("heartwheel_proxy_header_errors_total", Type::counter,
             "Connections closed for their PROXY header: malformed or cut short (invalid), not "
             "complete in time (timeout), from a source outside --proxy-protocol-from (untrusted).");
  out.sample(n.proxy.invalid, {{"cause", "invalid"}});
  out.sample(n.proxy.timeouts, {{"cause", "timeout"}});
  out.sample(n.proxy.untrusted, {{"cause", "untrusted"}});
  out.gauge("heartwheel_overload_idle_scale",
            "Factor applied to idle timeouts under overload (1: none); the smallest over the "
            "server's loops.",
            n.overload.idle_scale);
  out.counter("heartwheel_overload_scale_changes_total",
              "Times the overload idle-timeout scale moved.", n.overload.scale_changes);
  out.counter("heartwheel_overload_sweeps_total",
              "Overload sweeper wake-ups (re-arming the idlest connections at a new scale).",
              n.overload.sweeps);
  out.counter("heartwheel_overload_swept_total",
              "Connections whose idle deadline the overload sweeper re-armed.", n.overload.swept);
  out.counter("heartwheel_overload_activity_moves_total",
              "Moves of a connection to the front of the activity order (overload tracking).",
              n.overload.activity_moves);
  out.counter("heartwheel_overload_drop_probes_total",
              "Connections looked at to find the idlest to drop at the connection limit.",
              n.overload.drop_probes);
}

}  // namespace

void write(TextWriter& out, const net::LoopSnapshot& s) {
  write_connections(out, s.net);
  write_io(out, s.net);
  write_timers(out, s);
  write_loop(out, s);
  write_protection(out, s.net);
}

}  // namespace heartwheel::metrics
