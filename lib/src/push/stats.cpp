// DelayedQueueStats: its table of fields (heartwheel/common/stat_fields.h),
// merge and JSON. See heartwheel/push/delayed_stats.h. heartwheel-push writes
// the Prometheus families (programs/push/push_metrics.cpp).
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/push/delayed_stats.h>

namespace heartwheel::push {

namespace {
using S = DelayedQueueStats;
constexpr auto kCounter = StatKind::counter;
constexpr auto kGauge = StatKind::gauge;  // merged: summed over the queues
constexpr StatField<S> kFields[] = {
    {"queues", &S::queues, kGauge, "", ""},
    {"held", &S::held, kGauge, "", ""},
    {"scheduled", &S::scheduled, kCounter, "", ""},
    {"schedule_errors", &S::schedule_errors, kCounter, "", ""},
    {"schedule_capped", &S::schedule_capped, kCounter, "", ""},
    {"loads", &S::loads, kCounter, "", ""},
    {"load_errors", &S::load_errors, kCounter, "", ""},
    {"loaded", &S::loaded, kCounter, "", ""},
    {"fired", &S::fired, kCounter, "", ""},
    {"claimed", &S::claimed, kCounter, "", ""},
    {"claimed_elsewhere", &S::claimed_elsewhere, kCounter, "", ""},
    {"claim_retries", &S::claim_retries, kCounter, "", ""},
    {"lost_claims", &S::lost_claims, kCounter, "", ""},
    {"delivered", &S::delivered, kCounter, "", ""},
    {"deliver_errors", &S::deliver_errors, kCounter, "", ""},
    {"acked", &S::acked, kCounter, "", ""},
    {"requeued", &S::requeued, kCounter, "", ""},
    {"cancelled", &S::cancelled, kCounter, "", ""},
    {"cancel_missed", &S::cancel_missed, kCounter, "", ""},
    {"redis_errors", &S::redis_errors, kCounter, "", ""},
};
static_assert(stat_fields_cover(StatTable<S>(kFields), 0), "a DelayedQueueStats field without a row");
}  // namespace

void DelayedQueueStats::merge(const DelayedQueueStats& other) noexcept {
  merge_stat_fields(StatTable<S>(kFields), *this, other);
}

std::string to_json(const DelayedQueueStats& stats) {
  std::string out = "{";
  append_stat_fields_json(out, StatTable<S>(kFields), stats);
  out += '}';
  return out;
}

}  // namespace heartwheel::push
