// heartwheel/metrics/pubsub_metrics.h - pub/sub counters as Prometheus metric
// families (heartwheel_pubsub_*). Every family, its type, labels and meaning:
// lib/src/metrics/README.md.
//
// Two sources, two calls:
// - pubsub::HubStats, usually the merge of every loop's Hub::stats() (copied
//   on each loop's thread, e.g. into a WorkerBoard): subscriptions, subscribes,
//   recoveries, publications through the hubs, fan-out, deliveries by outcome.
//   A server with no hub yet writes HubStats{} (zeros).
// - pubsub::BusStats, from Bus::stats() (any thread): the process-wide store:
//   hubs attached, channels, history held, epochs.
// Every delivery outcome is written, zeros included, so rate() works from the
// first scrape.
//
// Threads: any (each reads a copy). Cost: ~25 samples, a few microseconds.
#pragma once

#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/pubsub/stats.h>

namespace heartwheel::metrics {

// Appends the hubs' families. Throws std::logic_error if `out` already has
// one of them.
void write(TextWriter& out, const pubsub::HubStats& stats);

// Appends the bus's families. Throws std::logic_error if `out` already has
// one of them.
void write(TextWriter& out, const pubsub::BusStats& stats);

}  // namespace heartwheel::metrics
