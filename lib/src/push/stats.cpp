// DelayedQueueStats: its table of fields (heartwheel/common/stat_fields.h),
// merge, JSON and metric families. See heartwheel/push/delayed_stats.h.
#include <heartwheel/common/metric_families.h>
#include <heartwheel/push/delayed_stats.h>

namespace heartwheel::push {

namespace {
using S = DelayedQueueStats;
constexpr auto kCounter = StatKind::counter;
constexpr auto kGauge = StatKind::gauge;  // merged: summed over the queues
constexpr StatField<S> kFields[] = {
    {"queues", &S::queues, kGauge, "", ""},
    {"held", &S::held, kGauge, "heartwheel_push_delayed_held", "Delayed pushes in the wheels now."},
    {"scheduled", &S::scheduled, kCounter, "heartwheel_push_delayed_scheduled_total",
     "Delayed pushes stored in Redis."},
    {"schedule_errors", &S::schedule_errors, kCounter,
     "heartwheel_push_delayed_schedule_errors_total", "Delayed pushes that could not be stored."},
    {"schedule_capped", &S::schedule_capped, kCounter,
     "heartwheel_push_delayed_schedule_capped_total",
     "Delayed pushes refused: their owner had max_pending_per_owner pending."},
    {"loads", &S::loads, kCounter, "heartwheel_push_delayed_loads_total",
     "Window loads of due pushes completed."},
    {"load_errors", &S::load_errors, kCounter, "heartwheel_push_delayed_load_errors_total",
     "Window loads that failed (retried)."},
    {"loaded", &S::loaded, kCounter, "heartwheel_push_delayed_loaded_total",
     "Delayed pushes put into a wheel (by a load, a schedule or a reap)."},
    {"fired", &S::fired, kCounter, "heartwheel_push_delayed_fired_total",
     "Delayed pushes whose wheel entry came due (a claim follows)."},
    {"claimed", &S::claimed, kCounter, "heartwheel_push_delayed_claimed_total",
     "Claims won: this node delivers."},
    {"claimed_elsewhere", &S::claimed_elsewhere, kCounter,
     "heartwheel_push_delayed_claimed_elsewhere_total",
     "Claims that found the push gone (another node, a cancel)."},
    {"claim_retries", &S::claim_retries, kCounter, "heartwheel_push_delayed_claim_retries_total",
     "Claims that failed and were tried again."},
    {"lost_claims", &S::lost_claims, kCounter, "heartwheel_push_delayed_lost_claims_total",
     "Claim replies lost (disconnected, timed out): the push may have run."},
    {"delivered", &S::delivered, kCounter, "heartwheel_push_delayed_delivered_total",
     "Delayed pushes whose deliver() returned."},
    {"deliver_errors", &S::deliver_errors, kCounter, "heartwheel_push_delayed_deliver_errors_total",
     "Delayed pushes whose deliver() threw: left for the lease."},
    {"acked", &S::acked, kCounter, "heartwheel_push_delayed_acked_total",
     "Deliveries Redis confirmed."},
    {"requeued", &S::requeued, kCounter, "heartwheel_push_delayed_requeued_total",
     "Expired claims this node's reaper put back."},
    {"cancelled", &S::cancelled, kCounter, "heartwheel_push_delayed_cancelled_total",
     "Cancels that removed a push."},
    {"cancel_missed", &S::cancel_missed, kCounter, "heartwheel_push_delayed_cancel_missed_total",
     "Cancels of an unknown, claimed or delivered push."},
    {"redis_errors", &S::redis_errors, kCounter, "heartwheel_push_delayed_redis_errors_total",
     "Failed Redis commands of every kind."},
};
static_assert(stat_fields_cover(StatTable<S>(kFields), 0), "a DelayedQueueStats field without a row");
}  // namespace

StatTable<DelayedQueueStats> DelayedQueueStats::fields() noexcept { return kFields; }

void DelayedQueueStats::merge(const DelayedQueueStats& other) noexcept {
  merge_stat_fields(StatTable<S>(kFields), *this, other);
}

std::string to_json(const DelayedQueueStats& stats) {
  std::string out = "{";
  append_stat_fields_json(out, StatTable<S>(kFields), stats);
  out += '}';
  return out;
}

void write_metrics(MetricSink& out, const DelayedQueueStats& stats) {
  write_stat_families(out, DelayedQueueStats::fields(), stats);
}

}  // namespace heartwheel::push
