// heartwheel/common/metric_sink.h - where a layer writes its metric families,
// without knowing the format they end up in.
//
// What it is
//   The interface between the layers that keep counters and the metrics
//   layer that exposes them. Each layer publishes its families beside its
//   stats struct as `write_metrics(MetricSink&, const Stats&)` (net's
//   LoopSnapshot, http::SessionStats, ws::Stats, ...): the rows of the
//   struct's field table (write_stat_families, heartwheel/common/
//   metric_families.h) plus what a table cannot say (closes by reason,
//   histograms, close codes). heartwheel::metrics::TextWriter is the sink that
//   writes the Prometheus text format; a test may implement its own. So the
//   metrics layer writes any layer's families without including that
//   layer's headers, and a layer's families need no link to metrics.
//
//   A family starts with family(name, type, help); its samples follow. The
//   names follow Prometheus' rules (a sink may check them and throw, as
//   TextWriter does: std::invalid_argument for a bad name, std::logic_error
//   for a call out of order or a family twice in one exposition).
//
// Cost: one virtual call per family and per sample (a scrape, not the I/O
// path). Threads: one writer per sink.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

namespace heartwheel {

enum class MetricType { counter, gauge, histogram };

struct MetricLabel {
  std::string_view name;
  std::string_view value;
};

// A sample's labels: a braced list ({{"reason", "read_idle"}}) or a span.
// Refers to the caller's labels: use it within the call.
class MetricLabels {
 public:
  MetricLabels() noexcept = default;
  MetricLabels(std::initializer_list<MetricLabel> labels) noexcept
      : labels_(labels.begin(), labels.size()) {}
  MetricLabels(std::span<const MetricLabel> labels) noexcept : labels_(labels) {}
  auto begin() const noexcept { return labels_.begin(); }
  auto end() const noexcept { return labels_.end(); }
  bool empty() const noexcept { return labels_.empty(); }

 private:
  std::span<const MetricLabel> labels_;
};

class MetricSink {
 public:
  virtual ~MetricSink() = default;

  // Starts a family. A counter's name should end in _total and a unit be a
  // base unit (seconds, bytes), as promtool's lint asks.
  void family(std::string_view name, MetricType type, std::string_view help) {
    on_family(name, type, help);
  }
  // One sample of the current counter or gauge family.
  void sample(std::uint64_t value, MetricLabels labels = {}) { on_sample(value, labels); }
  void sample(double value, MetricLabels labels = {}) { on_sample(value, labels); }
  // One histogram of the current histogram family: `upper_bounds` increasing
  // and finite, `counts` one more (the last above the last bound), NOT
  // cumulative; `sum` the sum of the observed values.
  void histogram(std::span<const double> upper_bounds, std::span<const std::uint64_t> counts,
                 double sum, MetricLabels labels = {}) {
    on_histogram(upper_bounds, counts, sum, labels);
  }

  // Shorthands: a family with one unlabelled sample.
  void counter(std::string_view name, std::string_view help, std::uint64_t value) {
    family(name, MetricType::counter, help);
    sample(value);
  }
  void gauge(std::string_view name, std::string_view help, double value) {
    family(name, MetricType::gauge, help);
    sample(value);
  }
  void gauge(std::string_view name, std::string_view help, std::uint64_t value) {
    family(name, MetricType::gauge, help);
    sample(value);
  }

 protected:
  MetricSink() = default;
  MetricSink(const MetricSink&) = default;
  MetricSink& operator=(const MetricSink&) = default;

 private:
  virtual void on_family(std::string_view name, MetricType type, std::string_view help) = 0;
  virtual void on_sample(std::uint64_t value, MetricLabels labels) = 0;
  virtual void on_sample(double value, MetricLabels labels) = 0;
  virtual void on_histogram(std::span<const double> upper_bounds,
                            std::span<const std::uint64_t> counts, double sum,
                            MetricLabels labels) = 0;
};

}  // namespace heartwheel
