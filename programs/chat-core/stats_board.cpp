// See stats_board.h.
#include "stats_board.h"

namespace chat {

namespace {
constexpr auto kCounter = heartwheel::StatKind::counter;
constexpr heartwheel::StatField<ChatStats> kChatFields[] = {
    {"chat_connections", &ChatStats::chat_connections, kCounter, "", ""},
    {"echo_connections", &ChatStats::echo_connections, kCounter, "", ""},
    {"bad_json", &ChatStats::bad_json, kCounter, "", ""},
    {"binary_frames", &ChatStats::binary_frames, kCounter, "", ""},
    {"publications", &ChatStats::publications, kCounter, "", ""},
};
static_assert(heartwheel::stat_fields_cover(heartwheel::StatTable<ChatStats>(kChatFields),
                                            sizeof(ChatStats::requests) +
                                                sizeof(ChatStats::errors) +
                                                sizeof(ChatStats::limits)));

void append_counts(std::string& out, std::string_view key,
                   const std::map<std::string, std::uint64_t>& counts) {
  out += ",\"";
  out += key;
  out += "\":{";
  for (const auto& [name, n] : counts) {
    if (out.back() != '{') out += ',';
    out += '"';
    out += name;  // ops, error codes and limit names: [a-z_], never escaped
    out += "\":";
    out += std::to_string(n);
  }
  out += '}';
}
}  // namespace

heartwheel::StatTable<ChatStats> ChatStats::fields() noexcept { return kChatFields; }

void ChatStats::merge(const ChatStats& o) {
  heartwheel::merge_stat_fields(fields(), *this, o);
  for (const auto& [op, n] : o.requests) requests[op] += n;
  for (const auto& [code, n] : o.errors) errors[code] += n;
  for (const auto& [what, n] : o.limits) limits[what] += n;
}

std::string to_json(const ChatStats& stats) {
  std::string out = "{";
  heartwheel::append_stat_fields_json(out, ChatStats::fields(), stats);
  append_counts(out, "requests", stats.requests);
  append_counts(out, "errors", stats.errors);
  append_counts(out, "limits", stats.limits);
  out += '}';
  return out;
}

void write_limits_metrics(heartwheel::metrics::TextWriter& out, const ChatStats& stats) {
  out.family("heartwheel_chat_limits_total", heartwheel::metrics::Type::counter,
             "chat requests refused or replies cut by a per-connection budget (stats JSON "
             "chat.limits)");
  for (const std::string_view name : kLimitNames) {
    const auto it = stats.limits.find(std::string(name));
    out.sample(it == stats.limits.end() ? std::uint64_t{0} : it->second, {{"limit", name}});
  }
}

WorkerStats StatsBoard::total() const {
  std::lock_guard lock(mu_);
  WorkerStats t;
  for (const WorkerStats& s : slots_) {
    t.ws.merge(s.ws);
    t.chat.merge(s.chat);
    if (!s.has_hub) continue;
    if (t.has_hub)
      t.hub.merge(s.hub);
    else
      t.hub = s.hub;  // HubStats counts the hubs merged in: start from the first
    t.has_hub = true;
  }
  return t;
}

}  // namespace chat
