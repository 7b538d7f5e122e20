// heartwheel/metrics/stat_families.h - the Prometheus families of a stats
// struct's field table (heartwheel/common/stat_fields.h).
//
// write_families(out, table, stats) writes, in table order, one family per
// run of rows with the same metric name (help from the run's first row, type
// from its kind) and one sample per row, labelled when the row has a label.
// Rows without a metric are skipped. The families a struct writes by hand
// (per-reason arrays, histograms) go before or after.
//
// Errors: TextWriter's (std::logic_error for a family this exposition
// already has). Threads: one writer per TextWriter; `stats` is a copy.
#pragma once

#include <heartwheel/common/stat_fields.h>
#include <heartwheel/metrics/text_writer.h>

namespace heartwheel::metrics {

template <class S>
void write_families(TextWriter& out, StatTable<S> table, const S& stats) {
  std::string_view family;
  for (const StatField<S>& f : table) {
    if (f.metric.empty()) continue;
    if (f.metric != family) {
      family = f.metric;
      out.family(f.metric, f.kind == StatKind::gauge ? Type::gauge : Type::counter, f.help);
    }
    const std::uint64_t value = stats.*f.member;
    if (f.label_name.empty())
      out.sample(value);
    else
      out.sample(value, {{f.label_name, f.label_value}});
  }
}

}  // namespace heartwheel::metrics
