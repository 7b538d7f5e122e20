// DelayedQueueStats: merge and JSON. See heartwheel/push/delayed_stats.h.
#include <heartwheel/push/delayed_stats.h>

#include <nlohmann/json.hpp>

namespace heartwheel::push {

namespace {
// Every field once, for merge and to_json alike.
template <class S, class F>
void each_field(S& s, F&& f) {
  f("queues", s.queues);
  f("held", s.held);
  f("scheduled", s.scheduled);
  f("schedule_errors", s.schedule_errors);
  f("schedule_capped", s.schedule_capped);
  f("loads", s.loads);
  f("load_errors", s.load_errors);
  f("loaded", s.loaded);
  f("fired", s.fired);
  f("claimed", s.claimed);
  f("claimed_elsewhere", s.claimed_elsewhere);
  f("claim_retries", s.claim_retries);
  f("lost_claims", s.lost_claims);
  f("delivered", s.delivered);
  f("deliver_errors", s.deliver_errors);
  f("acked", s.acked);
  f("requeued", s.requeued);
  f("cancelled", s.cancelled);
  f("cancel_missed", s.cancel_missed);
  f("redis_errors", s.redis_errors);
}
}  // namespace

void DelayedQueueStats::merge(const DelayedQueueStats& other) noexcept {
  std::uint64_t* mine[32];
  std::size_t n = 0;
  each_field(*this, [&](const char*, std::uint64_t& v) { mine[n++] = &v; });
  n = 0;
  each_field(other, [&](const char*, const std::uint64_t& v) { *mine[n++] += v; });
}

std::string to_json(const DelayedQueueStats& stats) {
  nlohmann::json j = nlohmann::json::object();
  each_field(stats, [&](const char* name, const std::uint64_t& v) { j[name] = v; });
  return j.dump();
}

}  // namespace heartwheel::push
