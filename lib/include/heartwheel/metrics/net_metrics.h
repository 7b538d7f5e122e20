// heartwheel/metrics/net_metrics.h - a server's net counters as Prometheus
// metric families (heartwheel_connections_open, heartwheel_loop_lag_seconds,
// ...). Every family, its type, labels and meaning: lib/src/metrics/README.md.
//
// The snapshot is usually the merge of every loop of the server (all worker
// threads, all pre-forked processes: net::Workers::total(), or a merge of
// SharedSlots): the families carry no per-loop labels, so a scrape reads the
// whole server. Every close reason and every delivered deadline kind is
// written, zeros included, so rate() works from the first scrape.
//
// Threads: any (it reads a copy). Cost: ~70 samples, a few microseconds.
#pragma once

#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/net/stats.h>

namespace heartwheel::metrics {

// Appends the net, wheel and loop families of `snapshot` to `out`. Throws
// std::logic_error if `out` already has one of these families.
void write(TextWriter& out, const net::LoopSnapshot& snapshot);

}  // namespace heartwheel::metrics
