// heartwheel/metrics/text_writer.h - writes the Prometheus text exposition
// format, version 0.0.4 (Content-Type: text/plain; version=0.0.4).
//
// What it is
//   A builder of one exposition (one scrape's body), and the
//   heartwheel::MetricSink every layer's write_metrics() writes its families
//   into (heartwheel/metrics/stat_families.h). A metric family starts
//   with family(name, type, help), which writes its "# HELP" and "# TYPE"
//   lines; its samples follow: sample() for a counter or gauge, histogram()
//   for a histogram, which writes the cumulative name_bucket{le="..."} lines
//   (ending with le="+Inf"), name_sum and name_count. The format's rules are
//   enforced, so every text it produces parses:
//     - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
//       [a-zA-Z_][a-zA-Z0-9_]* and do not start with "__"; a histogram's own
//       labels may not be called "le";
//     - each family appears once per exposition, its samples together;
//     - label values escape \ " and newline (\\ \" \n), help text \ and
//       newline;
//     - numbers: integers as written, other values in the shortest form that
//       reads back exactly, +Inf, -Inf, NaN.
//   Breaking a rule throws (std::invalid_argument for a bad name,
//   std::logic_error for a call out of order): these are programming errors.
//
// Why by hand rather than prometheus-cpp (Debian's prometheus-cpp-dev):
// the counters already exist per loop (net::LoopSnapshot, http::SessionStats)
// and are merged on scrape, so prometheus-cpp's registry of atomic metric
// objects would be a second copy to keep in step; only its TextSerializer
// would be used, for ~150 lines of formatting, at the price of a dependency
// for every consumer of the library (its core library and headers).
//
// Cost: appends to one std::string; no allocation per sample beyond the
// string's growth. Threads: one writer per object.
#pragma once

#include <heartwheel/common/metric_sink.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>

namespace heartwheel::metrics {

// The vocabulary is common's (heartwheel/common/metric_sink.h), so that the
// layers below write their families without this layer.
using Type = MetricType;
using Label = MetricLabel;
using LabelSet = MetricLabels;
std::string_view to_string(Type type) noexcept;

// The Content-Type of the text format.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// The MetricSink calls, with these rules:
//   family(name, type, help): "# HELP name help" and "# TYPE name type".
//     Throws std::invalid_argument for an invalid name, std::logic_error for
//     a name this exposition already has.
//   sample(value, labels): one sample of the current counter or gauge
//     family. Throws std::logic_error when the current family is not a
//     counter or gauge (or there is none), std::invalid_argument for an
//     invalid label name.
//   histogram(upper_bounds, counts, sum, labels): one histogram of the
//     current histogram family, written as the format's cumulative buckets.
//     Throws std::logic_error when the current family is not a histogram,
//     std::invalid_argument for mismatched sizes, bounds that do not
//     increase, or a bad label name (incl. "le").
//   counter(), gauge(): a family with one unlabelled sample.
class TextWriter final : public MetricSink {
 public:
  const std::string& text() const noexcept { return out_; }
  std::string take() noexcept { return std::move(out_); }

 private:
  void on_family(std::string_view name, Type type, std::string_view help) override;
  void on_sample(std::uint64_t value, LabelSet labels) override;
  void on_sample(double value, LabelSet labels) override;
  void on_histogram(std::span<const double> upper_bounds, std::span<const std::uint64_t> counts,
                    double sum, LabelSet labels) override;

  void require(bool histogram_family) const;
  void series(std::string_view suffix, LabelSet labels, std::string_view le = {});
  void number(std::uint64_t value);
  void number(double value);

  std::string out_;
  std::string name_;  // the current family
  Type type_ = Type::counter;
  bool open_ = false;
  std::unordered_set<std::string> families_;
};

// For tests and the writer itself: the escaped forms.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);
bool valid_metric_name(std::string_view name) noexcept;
bool valid_label_name(std::string_view name) noexcept;

}  // namespace heartwheel::metrics
