// See stats_board.h.
#include "stats_board.h"

namespace chat {

void ChatStats::merge(const ChatStats& o) {
  chat_connections += o.chat_connections;
  echo_connections += o.echo_connections;
  bad_json += o.bad_json;
  binary_frames += o.binary_frames;
  for (const auto& [op, n] : o.requests) requests[op] += n;
  for (const auto& [code, n] : o.errors) errors[code] += n;
  publications += o.publications;
  for (const auto& [what, n] : o.limits) limits[what] += n;
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
