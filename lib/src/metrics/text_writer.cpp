// See heartwheel/metrics/text_writer.h. The format's reference:
// https://prometheus.io/docs/instrumenting/exposition_formats/ (text 0.0.4).
#include <heartwheel/metrics/text_writer.h>

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace heartwheel::metrics {

namespace {

bool name_start(char c, bool colon) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool name_char(char c, bool colon) noexcept {
  return name_start(c, colon) || (c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon) noexcept {
  if (name.empty() || !name_start(name[0], colon)) return false;
  for (char c : name)
    if (!name_char(c, colon)) return false;
  return true;
}

}  // namespace

std::string_view to_string(Type type) noexcept {
  switch (type) {
    case Type::counter:
      return "counter";
    case Type::gauge:
      return "gauge";
    case Type::histogram:
      return "histogram";
  }
  return "untyped";
}

bool valid_metric_name(std::string_view name) noexcept { return valid_name(name, true); }

bool valid_label_name(std::string_view name) noexcept {
  return valid_name(name, false) && !name.starts_with("__");
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string escape_help(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void TextWriter::on_family(std::string_view name, Type type, std::string_view help) {
  if (!valid_metric_name(name))
    throw std::invalid_argument("metrics: invalid metric name '" + std::string(name) + "'");
  if (!families_.emplace(name).second)
    throw std::logic_error("metrics: family '" + std::string(name) +
                           "' appears twice in one exposition");
  name_.assign(name);
  type_ = type;
  open_ = true;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += to_string(type);
  out_ += '\n';
}

void TextWriter::require(bool histogram_family) const {
  if (!open_) throw std::logic_error("metrics: a sample before any family");
  if ((type_ == Type::histogram) != histogram_family)
    throw std::logic_error("metrics: family '" + name_ + "' is a " + std::string(to_string(type_)) +
                           ": wrong kind of sample");
}

// name{labels,le="..."} with the family's name plus `suffix`.
void TextWriter::series(std::string_view suffix, LabelSet labels, std::string_view le) {
  out_ += name_;
  out_ += suffix;
  if (labels.empty() && le.empty()) {
    out_ += ' ';
    return;
  }
  out_ += '{';
  bool first = true;
  for (const Label& l : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += l.name;
    out_ += "=\"";
    out_ += escape_label_value(l.value);
    out_ += '"';
  }
  if (!le.empty()) {
    if (!first) out_ += ',';
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += "} ";
}

void TextWriter::number(std::uint64_t value) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, r.ptr);
}

void TextWriter::number(double value) {
  if (std::isnan(value)) {
    out_ += "NaN";
  } else if (std::isinf(value)) {
    out_ += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, value);  // shortest exact form
    out_.append(buf, r.ptr);
  }
}

namespace {
void check_labels(LabelSet labels, bool histogram) {
  for (const Label& l : labels) {
    if (!valid_label_name(l.name) || (histogram && l.name == "le"))
      throw std::invalid_argument("metrics: invalid label name '" + std::string(l.name) + "'");
  }
}
}  // namespace

void TextWriter::on_sample(std::uint64_t value, LabelSet labels) {
  require(false);
  check_labels(labels, false);
  series({}, labels);
  number(value);
  out_ += '\n';
}

void TextWriter::on_sample(double value, LabelSet labels) {
  require(false);
  check_labels(labels, false);
  series({}, labels);
  number(value);
  out_ += '\n';
}

void TextWriter::on_histogram(std::span<const double> upper_bounds,
                              std::span<const std::uint64_t> counts, double sum, LabelSet labels) {
  require(true);
  check_labels(labels, true);
  if (counts.size() != upper_bounds.size() + 1)
    throw std::invalid_argument("metrics: a histogram needs one count per bound plus +Inf");
  for (std::size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]) || (i > 0 && !(upper_bounds[i] > upper_bounds[i - 1])))
      throw std::invalid_argument("metrics: histogram bounds must be finite and increasing");
  }
  std::uint64_t cumulative = 0;
  char le[32];
  for (std::size_t i = 0; i < upper_bounds.size(); ++i) {
    cumulative += counts[i];
    const auto r = std::to_chars(le, le + sizeof le, upper_bounds[i]);
    series("_bucket", labels, std::string_view(le, static_cast<std::size_t>(r.ptr - le)));
    number(cumulative);
    out_ += '\n';
  }
  cumulative += counts.back();
  series("_bucket", labels, "+Inf");
  number(cumulative);
  out_ += '\n';
  series("_sum", labels);
  number(sum);
  out_ += '\n';
  series("_count", labels);
  number(cumulative);
  out_ += '\n';
}

}  // namespace heartwheel::metrics
