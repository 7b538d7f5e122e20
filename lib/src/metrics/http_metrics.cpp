// See heartwheel/metrics/http_metrics.h. The plain counters' families come
// from http::SessionStats::fields() (lib/src/http/session_stats.cpp); the
// responses by class and the duration histogram are written here.
#include <heartwheel/metrics/durations.h>
#include <heartwheel/metrics/http_metrics.h>
#include <heartwheel/metrics/stat_families.h>

namespace heartwheel::metrics {

void write(TextWriter& out, const http::SessionStats& s) {
  const auto [counts, rest] =
      split_after(http::SessionStats::fields(), "heartwheel_http_requests_total");
  write_families(out, counts, s);
  out.family("heartwheel_http_responses_total", Type::counter,
             "HTTP responses started, by status class (1xx includes 100 Continue).");
  static constexpr const char* kClasses[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
  for (std::size_t c = 1; c <= 5; ++c) out.sample(s.responses[c], {{"class", kClasses[c - 1]}});
  out.family("heartwheel_http_request_duration_seconds", Type::histogram,
             "First byte of a request to its complete response handed to the connection, for "
             "requests answered in full.");
  write_duration_histogram(out, s.request_duration);
  write_families(out, rest, s);
}

}  // namespace heartwheel::metrics
