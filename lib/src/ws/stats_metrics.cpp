// ws::Stats' metric families (heartwheel/ws/stats.h: write_metrics). The
// plain counters' families come from Stats::fields() (stats.cpp); the close
// reasons and codes are written here. Names follow the net families'
// conventions (lib/src/metrics/README.md): counters end in _total, one family
// per quantity with labels for its parts.
#include <heartwheel/common/metric_families.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/ws/stats.h>

#include <string>

namespace heartwheel::ws {

namespace {

// A peer's close code as a label value: RFC 6455's own codes (below 3000,
// checked on receipt) one by one, the application ranges grouped.
std::string received_code_label(std::uint16_t code) {
  if (code >= 4000) return "4xxx";
  if (code >= 3000) return "3xxx";
  return std::to_string(code);
}

void write_codes(MetricSink& out, const Stats::CodeCounts& codes, bool group_application_codes) {
  std::map<std::string, std::uint64_t> by_label;  // sorted, so the scrape is stable
  for (const auto& [code, n] : codes)
    by_label[group_application_codes ? received_code_label(code) : std::to_string(code)] += n;
  for (const auto& [label, n] : by_label) out.sample(n, {{"code", label}});
}

}  // namespace

void write_metrics(MetricSink& out, const Stats& s) {
  // The table's families, with the close reasons and codes in their places.
  const auto [connections, after_connections] =
      split_after(Stats::fields(), "heartwheel_ws_handshakes_refused_total");
  const auto [traffic, slow_consumers] =
      split_after(after_connections, "heartwheel_ws_protocol_errors_total");
  write_stat_families(out, connections, s);
  net::write_close_reasons(out, "heartwheel_ws_connections_closed_total",
                           "WebSocket connections closed, by reason (net::CloseReason).",
                           s.closed_by_reason);
  write_stat_families(out, traffic, s);
  out.family("heartwheel_ws_close_frames_sent_total", MetricType::counter,
             "Close frames the server sent, by close code.");
  write_codes(out, s.close_codes_sent, false);
  out.family("heartwheel_ws_close_frames_received_total", MetricType::counter,
             "Close frames peers sent, by close code (3000-3999 as 3xxx, 4000-4999 as 4xxx).");
  write_codes(out, s.close_codes_received, true);
  write_stat_families(out, slow_consumers, s);
}

}  // namespace heartwheel::ws
