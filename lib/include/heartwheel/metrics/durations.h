// heartwheel/metrics/durations.h - the library's duration histograms as
// Prometheus histograms (in seconds).
//
// Every duration histogram the library keeps has the same buckets: bucket i
// counts durations up to 2^i ms, the last one everything above
// (heartwheel::DurationHistogram, LoopWheel::LoopStats::lag_buckets). These
// write one as a histogram of the current family, le bounds 0.001, 0.002,
// 0.004, ... seconds and +Inf.
//
// Threads: as TextWriter (one writer per object).
#pragma once

#include <heartwheel/common/duration_histogram.h>
#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/common/time.h>

#include <cstdint>
#include <span>

namespace heartwheel::metrics {

// `buckets`: per bucket, not cumulative, at least 2 and at most 40; `sum`:
// the total of the recorded durations. Throws as TextWriter::histogram.
void write_duration_buckets(TextWriter& out, std::span<const std::uint64_t> buckets, Duration sum,
                            LabelSet labels = {});

template <std::size_t N>
void write_duration_histogram(TextWriter& out, const DurationHistogram<N>& h,
                              LabelSet labels = {}) {
  write_duration_buckets(out, h.buckets, h.sum, labels);
}

}  // namespace heartwheel::metrics
