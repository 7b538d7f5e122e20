// See heartwheel/metrics/ws_metrics.h. Names follow the net families'
// conventions (lib/src/metrics/README.md): counters end in _total, one family
// per quantity with labels for its parts.
#include <heartwheel/metrics/ws_metrics.h>

#include <string>

#include "close_reasons.h"

namespace heartwheel::metrics {

namespace {

// A peer's close code as a label value: RFC 6455's own codes (below 3000,
// checked on receipt) one by one, the application ranges grouped.
std::string received_code_label(std::uint16_t code) {
  if (code >= 4000) return "4xxx";
  if (code >= 3000) return "3xxx";
  return std::to_string(code);
}

void write_codes(TextWriter& out, const std::map<std::uint16_t, std::uint64_t>& codes,
                 bool group_application_codes) {
  std::map<std::string, std::uint64_t> by_label;  // sorted, so the scrape is stable
  for (const auto& [code, n] : codes)
    by_label[group_application_codes ? received_code_label(code) : std::to_string(code)] += n;
  for (const auto& [label, n] : by_label) out.sample(n, {{"code", label}});
}

void write_connections(TextWriter& out, const ws::Stats& s) {
  out.gauge("heartwheel_ws_connections_open", "WebSocket connections open now.", s.current);
  out.counter("heartwheel_ws_connections_opened_total",
              "Connections that became WebSocket connections (handshake accepted).", s.opened);
  out.counter("heartwheel_ws_handshakes_refused_total",
              "WebSocket upgrade requests refused (400, 403, 405 or 426).", s.handshakes_refused);
  write_close_reasons(out, "heartwheel_ws_connections_closed_total",
                      "WebSocket connections closed, by reason (net::CloseReason).",
                      s.closed_by_reason);
}

void write_traffic(TextWriter& out, const ws::Stats& s) {
  out.counter("heartwheel_ws_messages_received_total", "WebSocket messages received.",
              s.messages_received);
  out.counter("heartwheel_ws_messages_sent_total",
              "WebSocket messages sent (own and shared frames).", s.messages_sent);
  out.counter("heartwheel_ws_shared_messages_sent_total",
              "Of the messages sent, shared frames (one encoding written by reference to many "
              "connections).",
              s.shared_sent);
}

void write_heartbeat(TextWriter& out, const ws::Stats& s) {
  out.counter("heartwheel_ws_pings_sent_total", "Pings the server sent.", s.pings_sent);
  out.counter("heartwheel_ws_pongs_received_total", "Pongs received.", s.pongs_received);
  out.counter("heartwheel_ws_pings_received_total", "Pings received (each answered with a pong).",
              s.pings_received);
  out.counter("heartwheel_ws_pong_timeouts_total",
              "Connections closed because nothing arrived within the pong timeout of a ping.",
              s.pong_timeouts);
  out.counter("heartwheel_ws_close_timeouts_total",
              "Connections closed because the peer did not finish the close handshake in time.",
              s.close_timeouts);
  out.counter("heartwheel_ws_abnormal_closes_total",
              "Connections that ended without a close frame from the peer (1006).",
              s.abnormal_closes);
  out.counter("heartwheel_ws_protocol_errors_total",
              "Connections failed for breaking RFC 6455 (close 1002, 1007 or 1009 sent).",
              s.protocol_errors);
  out.family("heartwheel_ws_close_frames_sent_total", Type::counter,
             "Close frames the server sent, by close code.");
  write_codes(out, s.close_codes_sent, false);
  out.family("heartwheel_ws_close_frames_received_total", Type::counter,
             "Close frames peers sent, by close code (3000-3999 as 3xxx, 4000-4999 as 4xxx).");
  write_codes(out, s.close_codes_received, true);
}

void write_slow_consumers(TextWriter& out, const ws::Stats& s) {
  out.family("heartwheel_ws_slow_consumer_total", Type::counter,
             "Frames that would have queued past the per-connection limit, by the policy applied: "
             "close (the connection closed as slow_consumer) or skip (the frame not sent to it).");
  out.sample(s.slow_consumer_closes, {{"policy", "close"}});
  out.sample(s.slow_consumer_skips, {{"policy", "skip"}});
  out.counter(
      "heartwheel_ws_deliveries_dropped_total",
      "Shared frames not sent: their connection was already closing, or failed writing them.",
      s.deliveries_dropped);
}

}  // namespace

void write(TextWriter& out, const ws::Stats& s) {
  write_connections(out, s);
  write_traffic(out, s);
  write_heartbeat(out, s);
  write_slow_consumers(out, s);
}

}  // namespace heartwheel::metrics
