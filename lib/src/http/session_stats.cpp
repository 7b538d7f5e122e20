// SessionStats' field table (heartwheel/common/stat_fields.h), merge and
// metric families: the plain counters' from the table, the responses by
// class and the duration histogram by hand. The Prometheus names and help
// are lib/src/metrics/README.md's.
#include <heartwheel/common/metric_families.h>
#include <heartwheel/http/session_stats.h>

namespace heartwheel::http {

namespace {
using S = SessionStats;
constexpr auto kCounter = StatKind::counter;
constexpr std::string_view kTimeouts = "heartwheel_http_timeouts_total";
constexpr std::string_view kRefused = "heartwheel_http_refused_requests_total";

constexpr StatField<S> kFields[] = {
    {"sessions", &S::sessions, kCounter, "heartwheel_http_sessions_total",
     "HTTP sessions (connections) started."},
    {"requests", &S::requests, kCounter, "heartwheel_http_requests_total",
     "HTTP requests whose first byte arrived."},
    {"header_timeouts", &S::header_timeouts, kCounter, kTimeouts, "HTTP timeouts, by kind.", "kind",
     "header"},
    {"body_timeouts", &S::body_timeouts, kCounter, kTimeouts, "", "kind", "body"},
    {"request_timeouts", &S::request_timeouts, kCounter, kTimeouts, "", "kind", "request"},
    {"keepalive_timeouts", &S::keepalive_timeouts, kCounter, kTimeouts, "", "kind", "keepalive"},
    {"first_byte_timeouts", &S::first_byte_timeouts, kCounter, kTimeouts, "", "kind",
     "first_byte"},
    {"send_timeouts", &S::send_timeouts, kCounter, kTimeouts, "", "kind", "send"},
    {"parse_errors", &S::parse_errors, kCounter, kRefused,
     "Requests answered with an error before reaching the handler, by cause (400 parse error, "
     "431/414 header too large, 413 body too large).",
     "cause", "parse_error"},
    {"header_too_large", &S::header_too_large, kCounter, kRefused, "", "cause",
     "header_too_large"},
    {"body_too_large", &S::body_too_large, kCounter, kRefused, "", "cause", "body_too_large"},
    {"handler_errors", &S::handler_errors, kCounter, "heartwheel_http_handler_errors_total",
     "500 answers because a handler threw or dropped its Responder."},
    {"invalid_responses", &S::invalid_responses, kCounter,
     "heartwheel_http_invalid_responses_total",
     "500 answers because a handler's status or header was refused."},
    {"answers_refused", &S::answers_refused, kCounter, "heartwheel_http_answers_refused_total",
     "respond()/write() calls refused for exceeding max_buffered_bytes."},
    {"backpressure_pauses", &S::backpressure_pauses, kCounter,
     "heartwheel_http_backpressure_pauses_total",
     "Times reading paused because the connection was unwritable."},
    {"pipeline_yields", &S::pipeline_yields, kCounter, "heartwheel_http_pipeline_yields_total",
     "Times a connection paused after pipeline_burst pipelined requests to let the others have "
     "their turn."},
    {"upgrades", &S::upgrades, kCounter, "", ""},  // not exported
};
// The table and the members written by hand (responses by class, the
// request-duration histogram, closes by reason) are the whole struct.
static_assert(stat_fields_cover(StatTable<S>(kFields),
                                sizeof(S::responses) + sizeof(S::request_duration) +
                                    sizeof(S::closed_by_reason)));
}  // namespace

StatTable<SessionStats> SessionStats::fields() noexcept { return kFields; }

void SessionStats::merge(const SessionStats& o) noexcept {
  merge_stat_fields(fields(), *this, o);
  for (std::size_t i = 0; i < responses.size(); ++i) responses[i] += o.responses[i];
  request_duration.merge(o.request_duration);
  for (std::size_t i = 0; i < closed_by_reason.size(); ++i)
    closed_by_reason[i] += o.closed_by_reason[i];
}

void write_metrics(MetricSink& out, const SessionStats& s) {
  const auto [counts, rest] = split_after(SessionStats::fields(), "heartwheel_http_requests_total");
  write_stat_families(out, counts, s);
  out.family("heartwheel_http_responses_total", MetricType::counter,
             "HTTP responses started, by status class (1xx includes 100 Continue).");
  static constexpr const char* kClasses[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
  for (std::size_t c = 1; c <= 5; ++c) out.sample(s.responses[c], {{"class", kClasses[c - 1]}});
  out.family("heartwheel_http_request_duration_seconds", MetricType::histogram,
             "First byte of a request to its complete response handed to the connection, for "
             "requests answered in full.");
  write_duration_histogram(out, s.request_duration);
  write_stat_families(out, rest, s);
}

}  // namespace heartwheel::http
