// LoopSnapshot merging and its JSON form. Written by hand (the library has no
// JSON dependency); the keys are the contract listed in lib/src/net/README.md.
#include <heartwheel/net/deadline.h>
#include <heartwheel/net/stats.h>

#include <algorithm>
#include <sstream>

namespace heartwheel::net {

void LoopSnapshot::merge(const LoopSnapshot& o) noexcept {
  net.merge(o.net);
  wheel.scheduled += o.wheel.scheduled;
  wheel.relinked += o.wheel.relinked;
  wheel.cancelled += o.wheel.cancelled;
  wheel.fired += o.wheel.fired;
  wheel.cascaded += o.wheel.cascaded;
  wheel.max_lateness = std::max(wheel.max_lateness, o.wheel.max_lateness);
  wheel.total_lateness += o.wheel.total_lateness;
  wheel_entries += o.wheel_entries;
  loop.merge(o.loop);
  loops += o.loops;
}

namespace {
double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
}  // namespace

std::string to_json(const LoopSnapshot& s) {
  std::ostringstream o;
  const NetStats& n = s.net;
  o << "{\"connections_accepted\":" << n.accepted << ",\"connections_current\":" << n.current
    << ",\"connections_peak\":" << n.peak << ",\"connections_closed\":" << n.closed()
    << ",\"accept_errors\":" << n.accept_errors << ",\"fd_exhausted\":" << n.fd_exhausted
    << ",\"accept_pauses\":" << n.accept_pauses << ",\"accept_deferrals\":" << n.accept_deferrals
    << ",\"connect_failures\":" << n.connect_failures << ",\"closed_by_reason\":{";
  const char* sep = "";
  for (std::size_t i = 0; i < kCloseReasonCapacity; ++i) {
    const auto reason = static_cast<CloseReason>(i);
    if (!is_named(reason)) continue;
    o << sep << '"' << to_string(reason) << "\":" << n.closed_by_reason[i];
    sep = ",";
  }
  o << "},\"idle_events\":{";
  sep = "";
  for (std::size_t i = 0; i < kDeadlineCapacity; ++i) {
    const auto kind = static_cast<Deadline>(i);
    // write_stall is handled inside net, never delivered.
    if (!is_named(kind) || kind == Deadline::write_stall) continue;
    o << sep << '"' << to_string(kind) << "\":" << n.idle_events[i];
    sep = ",";
  }
  o << "},\"bytes_read\":" << n.bytes_read << ",\"bytes_written\":" << n.bytes_written
    << ",\"bytes_dropped\":" << n.bytes_dropped
    << ",\"handler_exceptions\":" << n.handler_exceptions
    << ",\"unwritable_events\":" << n.unwritable_events << ",\"read_pauses\":" << n.read_pauses
    << ",\"write_queue_bytes\":" << n.write_queue_bytes
    << ",\"connection_timers\":{\"fires\":" << n.timer_fires()
    << ",\"lateness_ms\":{\"max\":" << ms(n.timer_lateness_max) << ",\"mean\":"
    << (n.timer_fires() ? ms(n.timer_lateness.sum) / static_cast<double>(n.timer_fires()) : 0.0)
    << "}}"
    << ",\"loops\":" << s.loops << ",\"wheel\":{\"entries\":" << s.wheel_entries
    << ",\"scheduled\":" << s.wheel.scheduled << ",\"relinked\":" << s.wheel.relinked
    << ",\"cancelled\":" << s.wheel.cancelled << ",\"fired\":" << s.wheel.fired
    << ",\"cascaded\":" << s.wheel.cascaded << ",\"budget_exhausted\":" << s.loop.budget_exhausted
    << "},\"expiry_lateness_ms\":{\"max\":" << ms(s.wheel.max_lateness) << ",\"mean\":"
    << (s.wheel.fired ? ms(s.wheel.total_lateness) / static_cast<double>(s.wheel.fired) : 0.0)
    << "},\"loop\":{\"iterations\":" << s.loop.iterations << ",\"stalls\":" << s.loop.stalls
    << ",\"expiries_deferred\":" << s.loop.expiries_deferred
    << ",\"stall_ms\":{\"total\":" << ms(s.loop.stall_total) << ",\"max\":" << ms(s.loop.stall_max)
    << "},\"lag_ms\":{\"mean\":"
    << (s.loop.iterations ? ms(s.loop.lag_total) / static_cast<double>(s.loop.iterations) : 0.0)
    << "}}";
  const ProxyProtocolStats& p = n.proxy;
  o << ",\"proxy_protocol\":{\"v1\":" << p.v1 << ",\"v2\":" << p.v2 << ",\"local\":" << p.local
    << ",\"invalid\":" << p.invalid << ",\"timeouts\":" << p.timeouts << ",\"untrusted\":" << p.untrusted << "}";
  const OverloadStats& v = n.overload;
  o << ",\"overload\":{\"idle_scale\":" << v.idle_scale << ",\"scale_changes\":" << v.scale_changes
    << ",\"sweeps\":" << v.sweeps << ",\"swept\":" << v.swept
    << ",\"activity_moves\":" << v.activity_moves << ",\"drop_probes\":" << v.drop_probes
    << ",\"dropped_idle\":" << n.closed(CloseReason::overload)
    << ",\"ip_limited\":" << n.closed(CloseReason::ip_limit) << "}}";
  return o.str();
}

}  // namespace heartwheel::net
