// See heartwheel/metrics/http_metrics.h.
#include <heartwheel/metrics/durations.h>
#include <heartwheel/metrics/http_metrics.h>

namespace heartwheel::metrics {

void write(TextWriter& out, const http::SessionStats& s) {
  out.counter("heartwheel_http_sessions_total", "HTTP sessions (connections) started.", s.sessions);
  out.counter("heartwheel_http_requests_total", "HTTP requests whose first byte arrived.",
              s.requests);
  out.family("heartwheel_http_responses_total", Type::counter,
             "HTTP responses started, by status class (1xx includes 100 Continue).");
  static constexpr const char* kClasses[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
  for (std::size_t c = 1; c <= 5; ++c) out.sample(s.responses[c], {{"class", kClasses[c - 1]}});
  out.family("heartwheel_http_request_duration_seconds", Type::histogram,
             "First byte of a request to its complete response handed to the connection, for "
             "requests answered in full.");
  write_duration_histogram(out, s.request_duration);
  out.family("heartwheel_http_timeouts_total", Type::counter, "HTTP timeouts, by kind.");
  const std::pair<const char*, std::uint64_t> timeouts[] = {
      {"header", s.header_timeouts},         {"body", s.body_timeouts},
      {"request", s.request_timeouts},       {"keepalive", s.keepalive_timeouts},
      {"first_byte", s.first_byte_timeouts}, {"send", s.send_timeouts}};
  for (const auto& [kind, n] : timeouts) out.sample(n, {{"kind", kind}});
  out.family("heartwheel_http_refused_requests_total", Type::counter,
             "Requests answered with an error before reaching the handler, by cause (400 parse "
             "error, 431/414 header too large, 413 body too large).");
  const std::pair<const char*, std::uint64_t> refused[] = {{"parse_error", s.parse_errors},
                                                           {"header_too_large", s.header_too_large},
                                                           {"body_too_large", s.body_too_large}};
  for (const auto& [cause, n] : refused) out.sample(n, {{"cause", cause}});
  out.counter("heartwheel_http_handler_errors_total",
              "500 answers because a handler threw or dropped its Responder.", s.handler_errors);
  out.counter("heartwheel_http_invalid_responses_total",
              "500 answers because a handler's status or header was refused.", s.invalid_responses);
  out.counter("heartwheel_http_answers_refused_total",
              "respond()/write() calls refused for exceeding max_buffered_bytes.",
              s.answers_refused);
  out.counter("heartwheel_http_backpressure_pauses_total",
              "Times reading paused because the connection was unwritable.", s.backpressure_pauses);
  out.counter("heartwheel_http_pipeline_yields_total",
              "Times a connection paused after pipeline_burst pipelined requests to let the "
              "others have their turn.",
              s.pipeline_yields);
}

}  // namespace heartwheel::metrics
