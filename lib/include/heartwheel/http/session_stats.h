// heartwheel/http/session_stats.h - counters an HTTP server keeps.
//
// Sessions of one loop share one SessionStats (loop thread only, plain
// integers, no atomics). A multi-loop server sums them with merge() after
// collecting each loop's copy on that loop's thread.
#pragma once

#include <heartwheel/common/duration_histogram.h>
#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/net/close_reason.h>

#include <array>
#include <cstdint>

namespace heartwheel::http {

struct SessionStats {
  std::uint64_t sessions = 0;                // sessions started
  std::uint64_t requests = 0;                // requests whose first byte arrived
  std::array<std::uint64_t, 6> responses{};  // index status / 100: [1]=1xx ... [5]=5xx; [0] unused
  std::uint64_t header_timeouts = 0;         // 408: headers not complete in time
  std::uint64_t body_timeouts = 0;           // 408: gap between body reads too long
  std::uint64_t request_timeouts = 0;        // 503/408/abort: response not complete in time
  std::uint64_t keepalive_timeouts = 0;      // quiet close: idle between requests
  std::uint64_t first_byte_timeouts = 0;     // quiet close: connection never sent a byte
  std::uint64_t send_timeouts = 0;           // the connection closed for write_stall
  std::uint64_t parse_errors = 0;            // 400: malformed request
  std::uint64_t header_too_large = 0;        // 431 (414 when the target alone is too long)
  std::uint64_t body_too_large = 0;          // 413
  std::uint64_t handler_errors = 0;          // 500: handler threw or dropped its Responder
  std::uint64_t invalid_responses = 0;       // 500: a handler's status or header was refused
  std::uint64_t answers_refused = 0;         // respond()/write() over max_buffered_bytes
  std::uint64_t backpressure_pauses = 0;     // reading paused: the connection was unwritable
  std::uint64_t pipeline_yields = 0;  // reading paused for a turn after pipeline_burst requests
  // First byte of a request to its complete response handed to the
  // connection, for every request answered in full (loop clock, so 1 ms
  // resolution; buckets up to 2^18 ms = 262 s, then +Inf).
  DurationHistogram<20> request_duration;
  std::uint64_t upgrades = 0;  // connections handed to another protocol (Responder::upgrade)
  // Sessions ended, by reason: the session's own decision, or the
  // connection's reason when the connection closed first.
  net::CloseReasonCounts closed_by_reason{};

  std::uint64_t responses_total() const noexcept {
    std::uint64_t n = 0;
    for (auto r : responses) n += r;
    return n;
  }
  std::uint64_t closed(net::CloseReason reason) const noexcept {
    return closed_by_reason[static_cast<std::size_t>(reason)];
  }

  void merge(const SessionStats& o) noexcept;
  // The std::uint64_t fields' table (heartwheel/common/stat_fields.h): names,
  // Prometheus families (heartwheel_http_*) and help; lib/src/http/session_stats.cpp.
  static StatTable<SessionStats> fields() noexcept;
};

// Appends the heartwheel_http_* families (requests, responses by status
// class, the request-duration histogram, timeouts and refusals; every
// family: lib/src/metrics/README.md) into any sink (metrics::write(out,
// board.total()) for Prometheus). `stats` is usually the merge of every
// loop's NetHandler::stats() (copied on each loop's thread, e.g. from
// WorkersOptions::on_publish). Throws as the sink (TextWriter:
// std::logic_error if `out` already has one of them). Threads: any (it
// reads a copy).
void write_metrics(MetricSink& out, const SessionStats& stats);

}  // namespace heartwheel::http
