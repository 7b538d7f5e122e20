// heartwheel/metrics/ws_metrics.h - a WebSocket server's counters
// (ws::Stats) as Prometheus metric families (heartwheel_ws_*). Every family,
// its type, labels and meaning: lib/src/metrics/README.md.
//
// `stats` is usually the merge of every loop's ws::NetHandler::stats()
// (copied on each loop's thread, e.g. into a WorkerBoard). Every close reason
// and both slow-consumer policies are written, zeros included, so rate()
// works from the first scrape. Close codes are labels: the ones the server
// sent as they are (it picks them from a small set), the ones peers sent as
// they are below 3000 (RFC 6455's, validated on receipt) and grouped as
// "3xxx" and "4xxx" above (registered and private codes, which peers choose
// freely: one series each would let a peer grow the scrape).
//
// Threads: any (it reads a copy). Cost: ~50 samples, a few microseconds.
#pragma once

#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/ws/stats.h>

namespace heartwheel::metrics {

// Appends the heartwheel_ws_* families. Throws std::logic_error if `out`
// already has one of them.
void write(TextWriter& out, const ws::Stats& stats);

}  // namespace heartwheel::metrics
