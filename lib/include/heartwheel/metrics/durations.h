// heartwheel/metrics/durations.h - the library's duration histograms as
// Prometheus histograms (in seconds).
//
// Every duration histogram the library keeps has the same buckets: bucket i
// counts durations up to 2^i ms, the last one everything above
// (heartwheel::DurationHistogram, LoopWheel::LoopStats::lag_buckets).
// write_duration_buckets / write_duration_histogram write one as a histogram
// of the current family, le bounds 0.001, 0.002, 0.004, ... seconds and +Inf.
// They live in common (heartwheel/common/metric_families.h), where the layers
// that keep such histograms write their own families; these are the same
// functions under the metrics namespace.
#pragma once

#include <heartwheel/common/metric_families.h>

namespace heartwheel::metrics {

using heartwheel::write_duration_buckets;
using heartwheel::write_duration_histogram;

}  // namespace heartwheel::metrics
