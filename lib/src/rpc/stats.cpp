// NetHandlerStats' field table (heartwheel/common/stat_fields.h) and merge;
// CallTableStats' table.
// The Prometheus names and help are lib/src/metrics/README.md's.
#include <heartwheel/rpc/net_handler.h>

namespace heartwheel::rpc {

namespace {
using S = NetHandlerStats;
constexpr auto kCounter = StatKind::counter;
constexpr std::string_view kReceived = "heartwheel_rpc_frames_received_total";
constexpr std::string_view kSent = "heartwheel_rpc_frames_sent_total";

constexpr StatField<S> kFields[] = {
    {"requests", &S::requests, kCounter, kReceived,
     "RPC frames read, by type (unexpected: a request without a handler or a reply without a "
     "call).",
     "type", "request"},
    {"replies", &S::replies, kCounter, kReceived, "", "type", "reply"},
    {"pings_received", &S::pings_received, kCounter, kReceived, "", "type", "ping"},
    {"pongs_received", &S::pongs_received, kCounter, kReceived, "", "type", "pong"},
    {"unexpected_frames", &S::unexpected_frames, kCounter, kReceived, "", "type", "unexpected"},
    {"responses", &S::responses, kCounter, kSent,
     "RPC frames written, by type (each ping received is answered with a pong).", "type",
     "response"},
    {"errors_sent", &S::errors_sent, kCounter, kSent, "", "type", "error"},
    {"calls_sent", &S::calls_sent, kCounter, kSent, "", "type", "request"},
    {"pings_sent", &S::pings_sent, kCounter, kSent, "", "type", "ping"},
    {"", &S::pings_received, kCounter, kSent, "", "type", "pong"},  // a pong per ping received
    {"pong_timeouts", &S::pong_timeouts, kCounter, "heartwheel_rpc_pong_timeouts_total",
     "Connections closed because a ping went unanswered."},
    {"protocol_errors", &S::protocol_errors, kCounter, "heartwheel_rpc_protocol_errors_total",
     "Connections closed for a malformed or oversized frame."},
    {"dropped_replies", &S::dropped_replies, kCounter, "heartwheel_rpc_dropped_replies_total",
     "Answers owed to connections that closed first."},
    {"writes", &S::writes, kCounter, "heartwheel_rpc_writes_total",
     "Batched writes (Connection::write calls)."},
    {"write_refusals", &S::write_refusals, kCounter, "heartwheel_rpc_write_refusals_total",
     "Batches refused by a full write queue (the connection closed as slow_consumer)."},
    // Not exported (their totals are in the families above).
    {"frames_too_large", &S::frames_too_large, kCounter, "", ""},
    {"refused_draining", &S::refused_draining, kCounter, "", ""},
    {"unanswered", &S::unanswered, kCounter, "", ""},
    {"frames_sent", &S::frames_sent, kCounter, "", ""},
};
static_assert(stat_fields_cover(StatTable<S>(kFields), 0));
}  // namespace

StatTable<NetHandlerStats> NetHandlerStats::fields() noexcept { return kFields; }

void NetHandlerStats::merge(const NetHandlerStats& o) noexcept {
  merge_stat_fields(fields(), *this, o);
}

namespace {
using C = CallTableStats;
constexpr StatField<C> kCallFields[] = {
    {"started", &C::started, kCounter, "", ""},
    {"ok", &C::ok, kCounter, "", ""},
    {"errors", &C::errors, kCounter, "", ""},
    {"timed_out", &C::timed_out, kCounter, "", ""},
    {"failed", &C::failed, kCounter, "", ""},
    {"refused", &C::refused, kCounter, "", ""},
    {"late_replies", &C::late_replies, kCounter, "", ""},
    {"duplicate_replies", &C::duplicate_replies, kCounter, "", ""},
    {"unknown_replies", &C::unknown_replies, kCounter, "", ""},
    {"peak_in_flight", &C::peak_in_flight, StatKind::gauge, "", ""},
};
static_assert(stat_fields_cover(StatTable<C>(kCallFields), 0),
              "a CallTableStats field without a row");
}  // namespace

StatTable<CallTableStats> CallTableStats::fields() noexcept { return kCallFields; }

}  // namespace heartwheel::rpc
