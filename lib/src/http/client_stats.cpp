// ClientStats' field table (heartwheel/common/stat_fields.h), merge and its
// metric families (write_metrics).
#include <heartwheel/common/metric_families.h>
#include <heartwheel/http/client.h>

namespace heartwheel::http {

namespace {
using S = ClientStats;
constexpr auto kCounter = StatKind::counter;
constexpr std::string_view kEnded = "heartwheel_http_client_requests_ended_total";

constexpr StatField<S> kFields[] = {
    {"requests", &S::requests, kCounter, "heartwheel_http_client_requests_total",
     "Requests an HTTP client accepted."},
    {"refused", &S::refused, kCounter, "heartwheel_http_client_requests_refused_total",
     "Requests refused at once: max_in_flight were in flight."},
    {"responses", &S::responses, kCounter, kEnded,
     "Requests ended, by how: a response (any status) or an error.", "result", "response"},
    {"timed_out", &S::timed_out, kCounter, kEnded, "", "result", "timed_out"},
    {"too_large", &S::too_large, kCounter, kEnded, "", "result", "too_large"},
    {"protocol_errors", &S::protocol_errors, kCounter, kEnded, "", "result", "protocol_error"},
    {"connection_errors", &S::connection_errors, kCounter, kEnded, "", "result",
     "connection_error"},
    {"errors", &S::errors, kCounter, "", ""},  // the sum of the four above (and shutting_down)
    {"retries", &S::retries, kCounter, "heartwheel_http_client_retries_total",
     "Idempotent requests sent again after a connection failure."},
    {"sent", &S::sent, kCounter, "heartwheel_http_client_sent_total",
     "Requests written to a connection (retries count again)."},
    {"reused", &S::reused, kCounter, "heartwheel_http_client_reused_total",
     "Requests written on a kept-alive connection that had carried one before."},
    {"waited", &S::waited, kCounter, "heartwheel_http_client_waited_total",
     "Requests that found no idle connection and waited for one."},
    {"bytes_received", &S::bytes_received, kCounter,
     "heartwheel_http_client_body_bytes_received_total", "Response body bytes received."},
    {"callback_exceptions", &S::callback_exceptions, kCounter,
     "heartwheel_http_client_callback_exceptions_total",
     "Response callbacks that threw (swallowed: no exception crosses the loop)."},
};
static_assert(stat_fields_cover(StatTable<S>(kFields), 0));
}  // namespace

StatTable<ClientStats> ClientStats::fields() noexcept { return kFields; }

void ClientStats::merge(const ClientStats& o) noexcept { merge_stat_fields(fields(), *this, o); }

void write_metrics(MetricSink& out, const ClientStats& stats) {
  write_stat_families(out, ClientStats::fields(), stats);
}

}  // namespace heartwheel::http
