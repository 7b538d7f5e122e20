// ws::Stats: its field table (heartwheel/common/stat_fields.h), merging and
// the JSON form (written by hand: the library has no JSON dependency). See
// heartwheel/ws/stats.h; the Prometheus names are lib/src/metrics/README.md's.
#include <heartwheel/ws/stats.h>

#include <string>

namespace heartwheel::ws {

namespace {
constexpr auto kCounter = StatKind::counter;
constexpr StatField<Stats> kFields[] = {
    {"current", &Stats::current, StatKind::gauge, "heartwheel_ws_connections_open",
     "WebSocket connections open now."},
    {"opened", &Stats::opened, kCounter, "heartwheel_ws_connections_opened_total",
     "Connections that became WebSocket connections (handshake accepted)."},
    {"handshakes_refused", &Stats::handshakes_refused, kCounter,
     "heartwheel_ws_handshakes_refused_total",
     "WebSocket upgrade requests refused (400, 403, 405 or 426)."},
    {"messages_received", &Stats::messages_received, kCounter,
     "heartwheel_ws_messages_received_total", "WebSocket messages received."},
    {"messages_sent", &Stats::messages_sent, kCounter, "heartwheel_ws_messages_sent_total",
     "WebSocket messages sent (own and shared frames)."},
    {"shared_sent", &Stats::shared_sent, kCounter, "heartwheel_ws_shared_messages_sent_total",
     "Of the messages sent, shared frames (one encoding written by reference to many "
     "connections)."},
    {"pings_sent", &Stats::pings_sent, kCounter, "heartwheel_ws_pings_sent_total",
     "Pings the server sent."},
    {"pongs_received", &Stats::pongs_received, kCounter, "heartwheel_ws_pongs_received_total",
     "Pongs received."},
    {"pings_received", &Stats::pings_received, kCounter, "heartwheel_ws_pings_received_total",
     "Pings received (each answered with a pong, or by a later one's)."},
    {"pongs_folded", &Stats::pongs_folded, kCounter, "heartwheel_ws_pongs_folded_total",
     "Pings answered only by a later ping's pong: the peer was not reading what was queued "
     "for it (at most one pong waits per connection)."},
    {"messages_after_close", &Stats::messages_after_close, kCounter,
     "heartwheel_ws_messages_after_close_total",
     "Messages that arrived after the server sent its close frame: not delivered."},
    {"pong_timeouts", &Stats::pong_timeouts, kCounter, "heartwheel_ws_pong_timeouts_total",
     "Connections closed because nothing arrived within the pong timeout of a ping."},
    {"close_timeouts", &Stats::close_timeouts, kCounter, "heartwheel_ws_close_timeouts_total",
     "Connections closed because the peer did not finish the close handshake in time."},
    {"abnormal_closes", &Stats::abnormal_closes, kCounter, "heartwheel_ws_abnormal_closes_total",
     "Connections that ended without a close frame from the peer (1006)."},
    {"protocol_errors", &Stats::protocol_errors, kCounter, "heartwheel_ws_protocol_errors_total",
     "Connections failed for breaking RFC 6455 (close 1002, 1007 or 1009 sent)."},
    {"slow_consumer_closes", &Stats::slow_consumer_closes, kCounter,
     "heartwheel_ws_slow_consumer_total",
     "Frames that would have queued past the per-connection limit, by the policy applied: "
     "close (the connection closed as slow_consumer) or skip (the frame not sent to it).",
     "policy", "close"},
    {"slow_consumer_skips", &Stats::slow_consumer_skips, kCounter,
     "heartwheel_ws_slow_consumer_total", "", "policy", "skip"},
    {"deliveries_dropped", &Stats::deliveries_dropped, kCounter,
     "heartwheel_ws_deliveries_dropped_total",
     "Shared frames not sent: their connection was already closing, or failed writing them."},
    {"compression_negotiated", &Stats::compression_negotiated, kCounter,
     "heartwheel_ws_compression_negotiated_total",
     "Connections that agreed on permessage-deflate."},
    {"compressed_messages_sent", &Stats::compressed_messages_sent, kCounter,
     "heartwheel_ws_compressed_messages_total",
     "Messages sent or received compressed (permessage-deflate), by direction.", "direction",
     "sent"},
    {"compressed_messages_received", &Stats::compressed_messages_received, kCounter,
     "heartwheel_ws_compressed_messages_total", "", "direction", "received"},
    {"compressed_sent_uncompressed_bytes", &Stats::compressed_sent_uncompressed_bytes, kCounter,
     "heartwheel_ws_compression_uncompressed_bytes_total",
     "Payload bytes of the compressed messages before compression (sent) or after inflating "
     "(received), by direction.",
     "direction", "sent"},
    {"compressed_received_uncompressed_bytes", &Stats::compressed_received_uncompressed_bytes,
     kCounter, "heartwheel_ws_compression_uncompressed_bytes_total", "", "direction", "received"},
    {"compressed_sent_compressed_bytes", &Stats::compressed_sent_compressed_bytes, kCounter,
     "heartwheel_ws_compression_compressed_bytes_total",
     "Payload bytes of the compressed messages as on the wire, by direction.", "direction", "sent"},
    {"compressed_received_compressed_bytes", &Stats::compressed_received_compressed_bytes, kCounter,
     "heartwheel_ws_compression_compressed_bytes_total", "", "direction", "received"},
    {"deflate_calls", &Stats::deflate_calls, kCounter, "heartwheel_ws_deflate_calls_total",
     "Messages deflated: a shared frame (a publication) once per loop, however many "
     "subscribers get it."},
    {"compression_skipped_small", &Stats::compression_skipped_small, kCounter,
     "heartwheel_ws_compression_skipped_total",
     "Messages to compressing peers sent uncompressed: under the size threshold (small), or "
     "no smaller once deflated (incompressible).",
     "reason", "small"},
    {"compression_skipped_incompressible", &Stats::compression_skipped_incompressible, kCounter,
     "heartwheel_ws_compression_skipped_total", "", "reason", "incompressible"},
    {"inflate_yields", &Stats::inflate_yields, kCounter, "heartwheel_ws_inflate_yields_total",
     "Reads whose inflating stopped at the per-read budget to let other connections have "
     "their turn."},
};
// The table and the members written by hand are the whole struct.
static_assert(stat_fields_cover(StatTable<Stats>(kFields),
                                sizeof(net::CloseReasonCounts) + 2 * sizeof(Stats::CodeCounts)));

void append_codes(std::string& out, const Stats::CodeCounts& m) {
  out += '{';
  for (const auto& [code, n] : m) {
    if (out.back() != '{') out += ',';
    out += '"' + std::to_string(code) + "\":" + std::to_string(n);
  }
  out += '}';
}
}  // namespace

StatTable<Stats> Stats::fields() noexcept { return kFields; }

void Stats::merge(const Stats& o) {
  merge_stat_fields(Stats::fields(), *this, o);
  for (std::size_t i = 0; i < closed_by_reason.size(); ++i)
    closed_by_reason[i] += o.closed_by_reason[i];
  for (const auto& [code, n] : o.close_codes_sent) close_codes_sent[code] += n;
  for (const auto& [code, n] : o.close_codes_received) close_codes_received[code] += n;
}

std::string to_json(const Stats& s) {
  std::string out = "{";
  append_stat_fields_json(out, Stats::fields(), s);
  out += ",\"closed_by_reason\":";
  net::append_close_reasons_json(out, s.closed_by_reason);
  out += ",\"close_codes_sent\":";
  append_codes(out, s.close_codes_sent);
  out += ",\"close_codes_received\":";
  append_codes(out, s.close_codes_received);
  out += '}';
  return out;
}

}  // namespace heartwheel::ws
