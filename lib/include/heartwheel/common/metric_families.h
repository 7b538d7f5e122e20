// heartwheel/common/metric_families.h - the metric families every layer
// writes the same way: a stats struct's field table, and the library's
// duration histograms.
//
// write_stat_families(out, table, stats) writes, in table order, one family
// per run of rows with the same metric name (help from the run's first row,
// type from its kind) and one sample per row, labelled when the row has a
// label. Rows without a metric are skipped. The families a layer writes by
// hand (per-reason arrays, histograms) go before or after
// (split_after, heartwheel/common/stat_fields.h).
//
// write_duration_buckets / write_duration_histogram write one
// DurationHistogram (bucket i counts durations up to 2^i ms, the last one
// everything above; LoopWheel's lag buckets are the same) as a histogram of
// the current family in seconds: le 0.001, 0.002, 0.004, ... and +Inf.
//
// Errors: the sink's (TextWriter: std::logic_error for a family the
// exposition already has); write_duration_buckets throws
// std::invalid_argument for fewer than 2 or more than 40 buckets.
// Threads: one writer per sink; `stats` is a copy.
#pragma once

#include <heartwheel/common/duration_histogram.h>
#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/common/time.h>

#include <cstdint>
#include <span>
#include <string_view>

namespace heartwheel {

template <class S>
void write_stat_families(MetricSink& out, StatTable<S> table, const S& stats) {
  std::string_view family;
  for (const StatField<S>& f : table) {
    if (f.metric.empty()) continue;
    if (f.metric != family) {
      family = f.metric;
      out.family(f.metric, f.kind == StatKind::gauge ? MetricType::gauge : MetricType::counter,
                 f.help);
    }
    const std::uint64_t value = stats.*f.member;
    if (f.label_name.empty())
      out.sample(value);
    else
      out.sample(value, {{f.label_name, f.label_value}});
  }
}

// `buckets`: per bucket, not cumulative; `sum`: the total of the recorded
// durations.
void write_duration_buckets(MetricSink& out, std::span<const std::uint64_t> buckets, Duration sum,
                            MetricLabels labels = {});

template <std::size_t N>
void write_duration_histogram(MetricSink& out, const DurationHistogram<N>& h,
                              MetricLabels labels = {}) {
  write_duration_buckets(out, h.buckets, h.sum, labels);
}

}  // namespace heartwheel
