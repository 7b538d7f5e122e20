// The WebSocket and pub/sub metric families (ws::write_metrics,
// pubsub::write_metrics): their names, a contract with dashboards and alerts
// (lib/src/metrics/README.md lists the same), what each sample reads, and
// the bounded label sets (close codes peers choose).
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/pubsub/stats.h>
#include <heartwheel/ws/stats.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "metrics_text.h"

namespace metrics = heartwheel::metrics;
using metrics_text::families;
using metrics_text::has_line;

TEST_CASE("The WebSocket families keep their names and list every close reason and policy",
          "[metrics][names][ws]") {
  heartwheel::ws::Stats s;
  s.current = 3;
  s.opened = 5;
  s.handshakes_refused = 1;
  s.closed_by_reason[static_cast<std::size_t>(heartwheel::net::CloseReason::pong_timeout)] = 2;
  s.messages_received = 11;
  s.messages_sent = 13;
  s.shared_sent = 7;
  s.pings_sent = 4;
  s.pongs_received = 3;
  s.pong_timeouts = 2;
  s.slow_consumer_skips = 6;
  s.deliveries_dropped = 1;
  s.compressed_messages_sent = 8;
  s.compressed_received_uncompressed_bytes = 9000;
  s.compressed_sent_compressed_bytes = 700;
  s.deflate_calls = 2;
  s.compression_skipped_incompressible = 1;
  metrics::TextWriter out;
  metrics::write(out, s);
  const std::string& text = out.text();
  CHECK(families(text) ==
        std::vector<std::string>{
            "heartwheel_ws_connections_open",           "heartwheel_ws_connections_opened_total",
            "heartwheel_ws_handshakes_refused_total",   "heartwheel_ws_connections_closed_total",
            "heartwheel_ws_messages_received_total",    "heartwheel_ws_messages_sent_total",
            "heartwheel_ws_shared_messages_sent_total", "heartwheel_ws_pings_sent_total",
            "heartwheel_ws_pongs_received_total",       "heartwheel_ws_pings_received_total",
            "heartwheel_ws_pongs_folded_total",         "heartwheel_ws_messages_after_close_total",
            "heartwheel_ws_pong_timeouts_total",        "heartwheel_ws_close_timeouts_total",
            "heartwheel_ws_abnormal_closes_total",      "heartwheel_ws_protocol_errors_total",
            "heartwheel_ws_close_frames_sent_total",    "heartwheel_ws_close_frames_received_total",
            "heartwheel_ws_slow_consumer_total",        "heartwheel_ws_deliveries_dropped_total",
            "heartwheel_ws_compression_negotiated_total", "heartwheel_ws_compressed_messages_total",
            "heartwheel_ws_compression_uncompressed_bytes_total",
            "heartwheel_ws_compression_compressed_bytes_total", "heartwheel_ws_deflate_calls_total",
            "heartwheel_ws_compression_skipped_total", "heartwheel_ws_inflate_yields_total"});
  CHECK(has_line(text, "heartwheel_ws_connections_open 3"));
  CHECK(has_line(text, "heartwheel_ws_connections_opened_total 5"));
  CHECK(has_line(text, "heartwheel_ws_handshakes_refused_total 1"));
  CHECK(has_line(text, "heartwheel_ws_connections_closed_total{reason=\"pong_timeout\"} 2"));
  CHECK(has_line(text, "heartwheel_ws_messages_received_total 11"));
  CHECK(has_line(text, "heartwheel_ws_messages_sent_total 13"));
  CHECK(has_line(text, "heartwheel_ws_shared_messages_sent_total 7"));
  CHECK(has_line(text, "heartwheel_ws_pings_sent_total 4"));
  CHECK(has_line(text, "heartwheel_ws_pongs_received_total 3"));
  CHECK(has_line(text, "heartwheel_ws_pong_timeouts_total 2"));
  CHECK(has_line(text, "heartwheel_ws_slow_consumer_total{policy=\"close\"} 0"));
  CHECK(has_line(text, "heartwheel_ws_slow_consumer_total{policy=\"skip\"} 6"));
  CHECK(has_line(text, "heartwheel_ws_deliveries_dropped_total 1"));
  CHECK(has_line(text, "heartwheel_ws_compressed_messages_total{direction=\"sent\"} 8"));
  CHECK(has_line(text, "heartwheel_ws_compressed_messages_total{direction=\"received\"} 0"));
  CHECK(has_line(text,
                 "heartwheel_ws_compression_uncompressed_bytes_total{direction=\"received\"} 9000"));
  CHECK(has_line(text, "heartwheel_ws_compression_compressed_bytes_total{direction=\"sent\"} 700"));
  CHECK(has_line(text, "heartwheel_ws_deflate_calls_total 2"));
  CHECK(has_line(text, "heartwheel_ws_compression_skipped_total{reason=\"incompressible\"} 1"));
  for (std::size_t i = 0; i < heartwheel::net::kCloseReasonCapacity; ++i) {
    if (!heartwheel::net::is_named(static_cast<heartwheel::net::CloseReason>(i))) continue;
    const std::string reason =
        heartwheel::net::to_string(static_cast<heartwheel::net::CloseReason>(i));
    CHECK(text.find("heartwheel_ws_connections_closed_total{reason=\"" + reason + "\"}") !=
          std::string::npos);
  }
}

TEST_CASE("Close codes peers choose are grouped by range so no peer can add series",
          "[metrics][ws]") {
  heartwheel::ws::Stats a, b;
  a.close_codes_sent[1001] = 2;
  a.close_codes_sent[1009] = 1;
  a.close_codes_received[1000] = 3;
  a.close_codes_received[3001] = 1;
  a.close_codes_received[4000] = 1;
  b.close_codes_received[3999] = 2;
  b.close_codes_received[4999] = 4;
  b.close_codes_received[4321] = 1;
  a.merge(b);  // two workers
  metrics::TextWriter out;
  metrics::write(out, a);
  const std::string& text = out.text();
  CHECK(has_line(text, "heartwheel_ws_close_frames_sent_total{code=\"1001\"} 2"));
  CHECK(has_line(text, "heartwheel_ws_close_frames_sent_total{code=\"1009\"} 1"));
  CHECK(has_line(text, "heartwheel_ws_close_frames_received_total{code=\"1000\"} 3"));
  CHECK(has_line(text, "heartwheel_ws_close_frames_received_total{code=\"3xxx\"} 3"));
  CHECK(has_line(text, "heartwheel_ws_close_frames_received_total{code=\"4xxx\"} 6"));
  CHECK(text.find("code=\"4321\"") == std::string::npos);
  CHECK(text.find("code=\"3001\"") == std::string::npos);
}

TEST_CASE("The pub/sub families keep their names and list every delivery outcome",
          "[metrics][names][pubsub]") {
  heartwheel::pubsub::HubStats h;
  h.subscriptions = 4;
  h.channels = 2;
  h.subscribes = 6;
  h.unsubscribes = 2;
  h.recovered = 1;
  h.not_recovered = 2;
  h.publications = 9;
  h.delivery.fanned_out = 9;
  h.delivery.deliveries = 30;
  h.delivery.skips = 3;
  h.delivery.slow_closes = 1;
  h.delivery.dropped = 2;
  h.encodes = 10;
  heartwheel::pubsub::BusStats b;
  b.hubs = 2;
  b.channels = 3;
  b.history_publications = 9;
  b.history_bytes = 900;
  b.publications = 9;
  b.epochs = 3;
  metrics::TextWriter out;
  metrics::write(out, h);
  metrics::write(out, b);
  const std::string& text = out.text();
  CHECK(families(text) ==
        std::vector<std::string>{"heartwheel_pubsub_subscriptions",
                                 "heartwheel_pubsub_hub_channels",
                                 "heartwheel_pubsub_subscribes_total",
                                 "heartwheel_pubsub_unsubscribes_total",
                                 "heartwheel_pubsub_subscribe_errors_total",
                                 "heartwheel_pubsub_recoveries_total",
                                 "heartwheel_pubsub_publications_total",
                                 "heartwheel_pubsub_publish_errors_total",
                                 "heartwheel_pubsub_fanouts_total",
                                 "heartwheel_pubsub_deliveries_total",
                                 "heartwheel_pubsub_presence_deliveries_total",
                                 "heartwheel_pubsub_encodes_total",
                                 "heartwheel_pubsub_encode_errors_total",
                                 "heartwheel_pubsub_subscriber_errors_total",
                                 "heartwheel_pubsub_events_total",
                                 "heartwheel_pubsub_stale_events_total",
                                 "heartwheel_pubsub_wakeups_total",
                                 "heartwheel_pubsub_hubs",
                                 "heartwheel_pubsub_channels",
                                 "heartwheel_pubsub_history_publications",
                                 "heartwheel_pubsub_history_bytes",
                                 "heartwheel_pubsub_bus_publications_total",
                                 "heartwheel_pubsub_bus_publications_unheard_total",
                                 "heartwheel_pubsub_epochs_total",
                                 "heartwheel_pubsub_channels_freed_total",
                                 "heartwheel_pubsub_bad_channel_options_total",
                                 "heartwheel_pubsub_channels_refused_total",
                                 "heartwheel_pubsub_history_evictions_total",
                                 "heartwheel_pubsub_channels_evicted_total"});
  CHECK(has_line(text, "heartwheel_pubsub_subscriptions 4"));
  CHECK(has_line(text, "heartwheel_pubsub_hub_channels 2"));
  CHECK(has_line(text, "heartwheel_pubsub_subscribes_total 6"));
  CHECK(has_line(text, "heartwheel_pubsub_recoveries_total{result=\"recovered\"} 1"));
  CHECK(has_line(text, "heartwheel_pubsub_recoveries_total{result=\"not_recovered\"} 2"));
  CHECK(has_line(text, "heartwheel_pubsub_publications_total 9"));
  CHECK(has_line(text, "heartwheel_pubsub_fanouts_total 9"));
  CHECK(has_line(text, "heartwheel_pubsub_deliveries_total{outcome=\"delivered\"} 30"));
  CHECK(has_line(text, "heartwheel_pubsub_deliveries_total{outcome=\"skipped\"} 3"));
  CHECK(has_line(text, "heartwheel_pubsub_deliveries_total{outcome=\"closed\"} 1"));
  CHECK(has_line(text, "heartwheel_pubsub_deliveries_total{outcome=\"dropped\"} 2"));
  CHECK(has_line(text, "heartwheel_pubsub_encodes_total 10"));
  CHECK(has_line(text, "heartwheel_pubsub_hubs 2"));
  CHECK(has_line(text, "heartwheel_pubsub_channels 3"));
  CHECK(has_line(text, "heartwheel_pubsub_history_publications 9"));
  CHECK(has_line(text, "heartwheel_pubsub_history_bytes 900"));
  CHECK(has_line(text, "heartwheel_pubsub_epochs_total 3"));
}

TEST_CASE("Hub counters of several workers are summed in one scrape", "[metrics][pubsub]") {
  heartwheel::pubsub::HubStats a, b;
  a.subscriptions = 2;
  b.subscriptions = 5;
  a.delivery.deliveries = 10;
  b.delivery.deliveries = 15;
  b.delivery.skips = 1;
  a.merge(b);
  metrics::TextWriter out;
  metrics::write(out, a);
  CHECK(has_line(out.text(), "heartwheel_pubsub_subscriptions 7"));
  CHECK(has_line(out.text(), "heartwheel_pubsub_deliveries_total{outcome=\"delivered\"} 25"));
  CHECK(has_line(out.text(), "heartwheel_pubsub_deliveries_total{outcome=\"skipped\"} 1"));
}

TEST_CASE("Writing the WebSocket or pub/sub families twice into one exposition is refused",
          "[metrics][ws][pubsub]") {
  metrics::TextWriter out;
  metrics::write(out, heartwheel::ws::Stats{});
  metrics::write(out, heartwheel::pubsub::HubStats{});
  CHECK_THROWS_AS(metrics::write(out, heartwheel::ws::Stats{}), std::logic_error);
  CHECK_THROWS_AS(metrics::write(out, heartwheel::pubsub::HubStats{}), std::logic_error);
}
