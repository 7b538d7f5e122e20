// What the metrics are made of: the counters kept per loop (the write-queue
// gauge, the connection-timer lateness histogram, the HTTP request-duration
// histogram) measured on a manual clock, and the metric families written
// from them, whose names are a contract with dashboards and alerts.
#include <heartwheel/http/session_stats.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "http_harness.h"
#include "metrics_text.h"

namespace metrics = heartwheel::metrics;
using heartwheel::testing::Host;
using metrics_text::families;
using metrics_text::has_line;
using namespace std::chrono_literals;

namespace {

struct Quiet final : heartwheel::net::Handler {
  void on_data(heartwheel::net::Connection&, std::string_view) override {}
};

// Writes until the socket pair is full and the rest queues.
void fill(heartwheel::net::Connection& c) {
  const std::string block(64 * 1024, 'q');
  for (int i = 0; c.queued_bytes() == 0 && i < 1024; ++i) REQUIRE_FALSE(c.write(block));
  REQUIRE(c.queued_bytes() > 0);
}

}  // namespace

TEST_CASE("The write-queue gauge follows queued bytes and returns to zero once they are written",
          "[metrics][net]") {
  heartwheel::net::ConnectionOptions o;
  o.write.high_watermark = 1 << 30;  // keep reading: no pause, only the gauge matters
  o.write.max_queued_bytes = 0;
  o.write.stall_timeout = 0s;
  Quiet quiet;
  Host host(o);
  auto& a = host.open(quiet);
  auto& b = host.open(quiet);
  fill(*a.connection());
  fill(*b.connection());
  const auto queued = a.connection()->queued_bytes() + b.connection()->queued_bytes();
  // The gauge counts the in-flight write until it completes, so it is at
  // least what the kernel has not taken yet.
  CHECK(host.stats().write_queue_bytes >= queued);
  REQUIRE_FALSE(a.connection()->write("tail"));
  const auto before = host.stats().write_queue_bytes;
  for (int i = 0;
       i < 1000 && (a.connection()->queued_bytes() > 0 || b.connection()->queued_bytes() > 0);
       ++i) {
    a.received();
    b.received();
  }
  CHECK(before > 0);
  CHECK(host.stats().write_queue_bytes == 0);
}

TEST_CASE("Bytes still queued when a connection closes leave the write-queue gauge",
          "[metrics][net]") {
  heartwheel::net::ConnectionOptions o;
  o.write.stall_timeout = 0s;
  Quiet quiet;
  Host host(o);
  auto& peer = host.open(quiet);
  fill(*peer.connection());
  REQUIRE(host.stats().write_queue_bytes > 0);
  peer.connection()->close(heartwheel::net::CloseReason::local);
  host.poll();
  REQUIRE_FALSE(peer.open());
  CHECK(host.stats().write_queue_bytes == 0);
  CHECK(host.stats().bytes_dropped > 0);
}

TEST_CASE("Connection timer lateness lands in the bucket of fire time minus deadline",
          "[metrics][net]") {
  // End to end: the deadline set keeps ticks, so 5005 ms on a 10 ms wheel is
  // a 5010 ms deadline (never early); the virtual clock fires it on time,
  // so the fire is recorded with no lateness (the rounding is not the loop's).
  heartwheel::net::ConnectionOptions o;
  o.idle.read_idle = 5005ms;
  Quiet quiet;
  Host host(o, 10ms);
  auto& peer = host.open(quiet);
  host.run_for(5100ms);
  REQUIRE(peer.close_reason() == heartwheel::net::CloseReason::read_idle);
  const auto& h = host.stats().timer_lateness;
  CHECK(h.count() == 1);
  CHECK(h.buckets[0] == 1);
  CHECK(h.sum == 0ms);
  CHECK(host.stats().timer_lateness_max == 0ms);
  // The bucket of a late fire: what a loop that woke 5 ms after the deadline
  // records.
  heartwheel::net::NetStats late;
  late.record_timer_fire(5ms);
  CHECK(late.timer_lateness.buckets[3] == 1);  // (4, 8] ms
  CHECK(late.timer_lateness.sum == 5ms);
  CHECK(late.timer_lateness_max == 5ms);
}

TEST_CASE("HTTP request durations run from first byte to the complete response",
          "[metrics][http]") {
  http_test::Harness h;
  h.start();
  h.feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");  // answered at once
  h.feed("GET /async HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(h.held.size() == 1);
  h.run_for(5ms);
  REQUIRE(h.held[0].respond(200, "late"));
  const auto& d = h.stats.request_duration;
  CHECK(d.count() == 2);
  CHECK(d.buckets[0] == 1);  // <= 1 ms
  CHECK(d.buckets[3] == 1);  // (4, 8] ms
  CHECK(d.sum == 5ms);
}

TEST_CASE("The net families keep their names and list every close reason and deadline kind",
          "[metrics][names]") {
  heartwheel::net::LoopSnapshot s;
  s.net.current = 4;
  s.net.accepted = 9;
  s.net.closed_by_reason[static_cast<std::size_t>(heartwheel::net::CloseReason::read_idle)] = 5;
  s.net.idle_events[static_cast<std::size_t>(heartwheel::net::Deadline::ping)] = 2;
  s.net.write_queue_bytes = 123;
  s.net.record_timer_fire(3ms);
  s.wheel_entries = 4;
  s.loop.stalls = 1;
  metrics::TextWriter out;
  metrics::write(out, s);
  const std::string& text = out.text();
  CHECK(families(text) == std::vector<std::string>{"heartwheel_connections_open",
                                                   "heartwheel_connections_accepted_total",
                                                   "heartwheel_connections_closed_total",
                                                   "heartwheel_idle_events_total",
                                                   "heartwheel_accept_errors_total",
                                                   "heartwheel_accept_fd_exhausted_total",
                                                   "heartwheel_accept_pauses_total",
                                                   "heartwheel_accept_deferrals_total",
                                                   "heartwheel_handshakes_completed_total",
                                                   "heartwheel_handshakes_resumed_total",
                                                   "heartwheel_bytes_read_total",
                                                   "heartwheel_bytes_written_total",
                                                   "heartwheel_bytes_dropped_total",
                                                   "heartwheel_write_queue_bytes",
                                                   "heartwheel_unwritable_events_total",
                                                   "heartwheel_read_pauses_total",
                                                   "heartwheel_handler_exceptions_total",
                                                   "heartwheel_timer_lateness_seconds",
                                                   "heartwheel_wheel_entries",
                                                   "heartwheel_wheel_fired_total",
                                                   "heartwheel_loops",
                                                   "heartwheel_loop_iterations_total",
                                                   "heartwheel_loop_lag_seconds",
                                                   "heartwheel_loop_stalls_total",
                                                   "heartwheel_loop_stall_seconds_total",
                                                   "heartwheel_loop_expiries_deferred_total",
                                                   "heartwheel_loop_budget_exhausted_total",
                                                   "heartwheel_proxy_headers_total",
                                                   "heartwheel_proxy_local_headers_total",
                                                   "heartwheel_proxy_header_errors_total",
                                                   "heartwheel_overload_idle_scale",
                                                   "heartwheel_overload_scale_changes_total",
                                                   "heartwheel_overload_sweeps_total",
                                                   "heartwheel_overload_swept_total",
                                                   "heartwheel_overload_activity_moves_total",
                                                   "heartwheel_overload_drop_probes_total"});
  CHECK(has_line(text, "heartwheel_connections_open 4"));
  CHECK(has_line(text, "heartwheel_connections_accepted_total 9"));
  CHECK(has_line(text, "heartwheel_connections_closed_total{reason=\"read_idle\"} 5"));
  CHECK(has_line(text, "heartwheel_idle_events_total{kind=\"ping\"} 2"));
  CHECK(has_line(text, "heartwheel_write_queue_bytes 123"));
  CHECK(has_line(text, "heartwheel_timer_lateness_seconds_bucket{le=\"0.002\"} 0"));
  CHECK(has_line(text, "heartwheel_timer_lateness_seconds_bucket{le=\"0.004\"} 1"));
  CHECK(has_line(text, "heartwheel_timer_lateness_seconds_count 1"));
  CHECK(has_line(text, "heartwheel_wheel_entries 4"));
  CHECK(has_line(text, "heartwheel_loop_stalls_total 1"));
  // Every named number (net's own and the layers' registered ones), and
  // nothing else.
  for (std::size_t i = 0; i < heartwheel::net::kCloseReasonCapacity; ++i) {
    const auto reason = static_cast<heartwheel::net::CloseReason>(i);
    const bool listed = text.find("heartwheel_connections_closed_total{reason=\"" +
                                  std::string(heartwheel::net::to_string(reason)) + "\"}") !=
                        std::string::npos;
    CHECK(listed == heartwheel::net::is_named(reason));
  }
  for (std::size_t i = 0; i < heartwheel::net::kDeadlineCapacity; ++i) {
    const auto kind = static_cast<heartwheel::net::Deadline>(i);
    const bool listed =
        text.find("heartwheel_idle_events_total{kind=\"" +
                  std::string(heartwheel::net::to_string(kind)) + "\"}") != std::string::npos;
    // write_stall is never delivered.
    CHECK(listed == (heartwheel::net::is_named(kind) && kind != heartwheel::net::Deadline::write_stall));
  }
  // The layers' names, as dashboards read them.
  CHECK(has_line(text, "heartwheel_connections_closed_total{reason=\"header_timeout\"} 0"));
  CHECK(has_line(text, "heartwheel_idle_events_total{kind=\"keepalive_timeout\"} 0"));
}

TEST_CASE("The PROXY protocol and overload counters are exported, the scale as the smallest loop's",
          "[metrics][names]") {
  heartwheel::net::LoopSnapshot a, b;
  a.net.proxy.v1 = 3;
  a.net.proxy.v2 = 2;
  a.net.proxy.local = 1;
  a.net.proxy.invalid = 4;
  b.net.proxy.timeouts = 5;
  b.net.proxy.untrusted = 9;
  a.net.overload.idle_scale = 0.5;
  b.net.overload.idle_scale = 0.25;
  a.net.overload.scale_changes = 6;
  b.net.overload.swept = 7;
  b.net.overload.drop_probes = 8;
  a.merge(b);
  metrics::TextWriter out;
  metrics::write(out, a);
  const std::string& text = out.text();
  CHECK(has_line(text, "heartwheel_proxy_headers_total{version=\"1\"} 3"));
  CHECK(has_line(text, "heartwheel_proxy_headers_total{version=\"2\"} 2"));
  CHECK(has_line(text, "heartwheel_proxy_local_headers_total 1"));
  CHECK(has_line(text, "heartwheel_proxy_header_errors_total{cause=\"invalid\"} 4"));
  CHECK(has_line(text, "heartwheel_proxy_header_errors_total{cause=\"timeout\"} 5"));
  CHECK(has_line(text, "heartwheel_proxy_header_errors_total{cause=\"untrusted\"} 9"));
  CHECK(has_line(text, "heartwheel_overload_idle_scale 0.25"));
  CHECK(has_line(text, "heartwheel_overload_scale_changes_total 6"));
  CHECK(has_line(text, "heartwheel_overload_swept_total 7"));
  CHECK(has_line(text, "heartwheel_overload_drop_probes_total 8"));
  // Protection off: the families are there with zeros and a scale of 1.
  metrics::TextWriter idle;
  metrics::write(idle, heartwheel::net::LoopSnapshot{});
  CHECK(has_line(idle.text(), "heartwheel_overload_idle_scale 1"));
  CHECK(has_line(idle.text(), "heartwheel_proxy_headers_total{version=\"1\"} 0"));
}

TEST_CASE("The HTTP and RPC families keep their names", "[metrics][names]") {
  heartwheel::http::SessionStats h;
  h.requests = 3;
  h.responses[2] = 2;
  h.responses[4] = 1;
  h.request_duration.record(2ms);
  heartwheel::rpc::NetHandlerStats r;
  r.pings_sent = 7;
  r.pong_timeouts = 1;
  metrics::TextWriter out;
  metrics::write(out, h);
  metrics::write(out, r);
  const std::string& text = out.text();
  CHECK(families(text) ==
        std::vector<std::string>{
            "heartwheel_http_sessions_total", "heartwheel_http_requests_total",
            "heartwheel_http_responses_total", "heartwheel_http_request_duration_seconds",
            "heartwheel_http_timeouts_total", "heartwheel_http_refused_requests_total",
            "heartwheel_http_handler_errors_total", "heartwheel_http_invalid_responses_total",
            "heartwheel_http_answers_refused_total", "heartwheel_http_backpressure_pauses_total",
            "heartwheel_http_pipeline_yields_total",
            "heartwheel_rpc_frames_received_total", "heartwheel_rpc_frames_sent_total",
            "heartwheel_rpc_pong_timeouts_total", "heartwheel_rpc_protocol_errors_total",
            "heartwheel_rpc_dropped_replies_total", "heartwheel_rpc_writes_total",
            "heartwheel_rpc_write_refusals_total"});
  CHECK(has_line(text, "heartwheel_http_requests_total 3"));
  CHECK(has_line(text, "heartwheel_http_responses_total{class=\"2xx\"} 2"));
  CHECK(has_line(text, "heartwheel_http_responses_total{class=\"4xx\"} 1"));
  CHECK(has_line(text, "heartwheel_http_request_duration_seconds_bucket{le=\"0.002\"} 1"));
  CHECK(has_line(text, "heartwheel_http_request_duration_seconds_sum 0.002"));
  CHECK(has_line(text, "heartwheel_rpc_frames_sent_total{type=\"ping\"} 7"));
  CHECK(has_line(text, "heartwheel_rpc_pong_timeouts_total 1"));
}
