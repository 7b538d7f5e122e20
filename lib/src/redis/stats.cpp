// Merging and the JSON form of a Redis link's counters (stats.h). Written by
// hand like the other layers'; one table of fields serves both.
#include <heartwheel/redis/stats.h>

#include <cstddef>

namespace heartwheel::redis {

namespace {
struct Field {
  const char* name;
  std::uint64_t LinkStats::*member;
};
constexpr Field kFields[] = {
    {"links", &LinkStats::links},
    {"connected", &LinkStats::connected},
    {"in_flight", &LinkStats::in_flight},
    {"buffered", &LinkStats::buffered},
    {"buffered_bytes", &LinkStats::buffered_bytes},
    {"subscriptions", &LinkStats::subscriptions},
    {"active_subscriptions", &LinkStats::active_subscriptions},
    {"connects", &LinkStats::connects},
    {"reconnects", &LinkStats::reconnects},
    {"disconnects", &LinkStats::disconnects},
    {"connect_failures", &LinkStats::connect_failures},
    {"pings_sent", &LinkStats::pings_sent},
    {"pong_timeouts", &LinkStats::pong_timeouts},
    {"protocol_errors", &LinkStats::protocol_errors},
    {"setup_errors", &LinkStats::setup_errors},
    {"writes", &LinkStats::writes},
    {"callback_exceptions", &LinkStats::callback_exceptions},
    {"commands", &LinkStats::commands},
    {"sent", &LinkStats::sent},
    {"replies_ok", &LinkStats::replies_ok},
    {"replies_error", &LinkStats::replies_error},
    {"timed_out", &LinkStats::timed_out},
    {"failed_disconnected", &LinkStats::failed_disconnected},
    {"failed_stopped", &LinkStats::failed_stopped},
    {"retried", &LinkStats::retried},
    {"late_replies", &LinkStats::late_replies},
    {"refused_not_connected", &LinkStats::refused_not_connected},
    {"refused_buffer_full", &LinkStats::refused_buffer_full},
    {"refused_queue_full", &LinkStats::refused_queue_full},
    {"buffered_total", &LinkStats::buffered_total},
    {"script_fallbacks", &LinkStats::script_fallbacks},
    {"subscribes", &LinkStats::subscribes},
    {"unsubscribes", &LinkStats::unsubscribes},
    {"resubscribes", &LinkStats::resubscribes},
    {"resubscribe_rounds", &LinkStats::resubscribe_rounds},
    {"messages", &LinkStats::messages},
    {"stray_messages", &LinkStats::stray_messages},
};
// Every field is in the table (a new field without a row fails to compile).
static_assert(sizeof(LinkStats) == std::size(kFields) * sizeof(std::uint64_t));
}  // namespace

void LinkStats::merge(const LinkStats& other) noexcept {
  for (const Field& f : kFields) this->*f.member += other.*f.member;
}

std::string to_json(const LinkStats& stats) {
  std::string out = "{";
  for (const Field& f : kFields) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += f.name;
    out += "\":";
    out += std::to_string(stats.*f.member);
  }
  out += '}';
  return out;
}

}  // namespace heartwheel::redis
