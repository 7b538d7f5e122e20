// LoopSnapshot merging and its JSON form. Written by hand (the library has no
// JSON dependency): the counters from their field tables (stats.cpp), the
// rest here; the keys are the contract listed in lib/src/net/README.md.
#include <heartwheel/net/deadline.h>
#include <heartwheel/net/stats.h>

#include <sstream>

namespace heartwheel::net {

void LoopSnapshot::merge(const LoopSnapshot& o) noexcept {
  net.merge(o.net);
  wheel.merge(o.wheel);
  wheel_entries += o.wheel_entries;
  loop.merge(o.loop);
  loops += o.loops;
}

void append_close_reasons_json(std::string& out, const CloseReasonCounts& counts) {
  out += '{';
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const auto reason = static_cast<CloseReason>(i);
    if (!is_named(reason)) continue;
    if (out.back() != '{') out += ',';
    out += '"';
    out += to_string(reason);
    out += "\":";
    out += std::to_string(counts[i]);
  }
  out += '}';
}

namespace {
double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
}  // namespace

std::string to_json(const LoopSnapshot& s) {
  const NetStats& n = s.net;
  std::string out = "{";
  append_stat_fields_json(out, NetStats::fields(), n);
  out += ",\"connections_closed\":" + std::to_string(n.closed()) + ",\"closed_by_reason\":";
  append_close_reasons_json(out, n.closed_by_reason);
  out += ",\"idle_events\":{";
  for (std::size_t i = 0; i < kDeadlineCapacity; ++i) {
    const auto kind = static_cast<Deadline>(i);
    // write_stall is handled inside net, never delivered.
    if (!is_named(kind) || kind == Deadline::write_stall) continue;
    if (out.back() != '{') out += ',';
    out += '"';
    out += to_string(kind);
    out += "\":" + std::to_string(n.idle_events[i]);
  }
  out += '}';
  // The timers, the wheel and the loop: counters from their tables (the
  // loop's budget_exhausted also in "wheel", where it was first), durations
  // and means as doubles.
  std::ostringstream o;
  o << ",\"connection_timers\":{\"fires\":" << n.timer_fires()
    << ",\"lateness_ms\":{\"max\":" << ms(n.timer_lateness_max) << ",\"mean\":"
    << (n.timer_fires() ? ms(n.timer_lateness.sum) / static_cast<double>(n.timer_fires()) : 0.0)
    << "}}"
    << ",\"loops\":" << s.loops << ",\"wheel\":{\"entries\":" << s.wheel_entries;
  out += o.str();
  append_stat_fields_json(out, WheelStats::fields(), s.wheel);
  o.str("");
  o << ",\"budget_exhausted\":" << s.loop.budget_exhausted
    << "},\"expiry_lateness_ms\":{\"max\":" << ms(s.wheel.max_lateness) << ",\"mean\":"
    << (s.wheel.fired ? ms(s.wheel.total_lateness) / static_cast<double>(s.wheel.fired) : 0.0)
    << "},\"loop\":{";
  out += o.str();
  append_stat_fields_json(out, LoopWheel::LoopStats::fields(), s.loop);
  o.str("");
  o << ",\"stall_ms\":{\"total\":" << ms(s.loop.stall_total) << ",\"max\":" << ms(s.loop.stall_max)
    << "},\"lag_ms\":{\"mean\":"
    << (s.loop.iterations ? ms(s.loop.lag_total) / static_cast<double>(s.loop.iterations) : 0.0)
    << "}}";
  o << ",\"overload\":{\"idle_scale\":" << n.overload.idle_scale;
  out += o.str();
  append_stat_fields_json(out, OverloadStats::fields(), n.overload);
  out += ",\"dropped_idle\":" + std::to_string(n.closed(CloseReason::overload)) +
         ",\"ip_limited\":" + std::to_string(n.closed(CloseReason::ip_limit)) +
         "},\"proxy_protocol\":{";
  append_stat_fields_json(out, ProxyProtocolStats::fields(), n.proxy);
  out += "}}";
  return out;
}

}  // namespace heartwheel::net
