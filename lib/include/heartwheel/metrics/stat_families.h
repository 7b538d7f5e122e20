// heartwheel/metrics/stat_families.h - any layer's metric families into a
// TextWriter, without this layer knowing the layer.
//
// Each layer publishes its families beside its stats struct, as
// `write_metrics(MetricSink&, const Stats&)` in the layer's namespace
// (heartwheel/common/metric_sink.h): net::LoopSnapshot (heartwheel/net/stats.h),
// http::SessionStats, ws::Stats, rpc::NetHandlerStats, pubsub::HubStats and
// pubsub::BusStats, a span of redis::LinkMetrics, and any program's own.
// metrics::write(out, stats) calls the one for `stats`'s type, found by
// argument-dependent lookup, so
//   metrics::write(out, workers.total());  // #include <heartwheel/net/stats.h>
// needs the stats' own header and this one, and the metrics layer links
// none of the layers whose families it writes.
//
// write_families(out, table, stats) writes a field table's families
// (heartwheel/common/metric_families.h: write_stat_families).
//
// Errors: TextWriter's (std::logic_error for a family this exposition
// already has). Threads: one writer per TextWriter; `stats` is a copy.
#pragma once

#include <heartwheel/common/metric_families.h>
#include <heartwheel/metrics/text_writer.h>

namespace heartwheel::metrics {

template <class S>
void write_families(TextWriter& out, StatTable<S> table, const S& stats) {
  write_stat_families(out, table, stats);
}

// Appends the families `stats`'s layer publishes for it. Throws as that
// layer's write_metrics (std::logic_error if `out` already has one of them).
template <class Stats>
requires requires(MetricSink& sink, const Stats& s) { write_metrics(sink, s); }
void write(TextWriter& out, const Stats& stats) {
  MetricSink& sink = out;
  write_metrics(sink, stats);
}

}  // namespace heartwheel::metrics
