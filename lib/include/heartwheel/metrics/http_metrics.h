// heartwheel/metrics/http_metrics.h - an HTTP server's session counters as
// Prometheus metric families (heartwheel_http_*): requests, responses by
// status class, the request-duration histogram, timeouts and refusals.
// Every family: lib/src/metrics/README.md.
//
// `stats` is usually the merge of every loop's http::NetHandler::stats()
// (copied on each loop's thread, e.g. from net::WorkersOptions::on_publish).
//
// Threads: any (it reads a copy).
#pragma once

#include <heartwheel/http/session_stats.h>
#include <heartwheel/metrics/text_writer.h>

namespace heartwheel::metrics {

// Appends the heartwheel_http_* families. Throws std::logic_error if `out`
// already has one of them.
void write(TextWriter& out, const http::SessionStats& stats);

}  // namespace heartwheel::metrics
