// The timer layer's counter tables (heartwheel/common/stat_fields.h) and
// merges: WheelStats (timing_wheel.h) and LoopWheel::LoopStats
// (loop_wheel.h). The JSON keys are lib/src/net/README.md's (net writes the
// loop's snapshot), the Prometheus names lib/src/metrics/README.md's. The
// durations and the lag buckets are merged here and written by hand beside
// each table's use (lib/src/net/stats_json.cpp, lib/src/net/stats_metrics.cpp).
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/timer/timing_wheel.h>

#include <algorithm>

namespace heartwheel {

namespace {
constexpr auto kCounter = StatKind::counter;

constexpr StatField<WheelStats> kWheelFields[] = {
    {"scheduled", &WheelStats::scheduled, kCounter, "", ""},
    {"relinked", &WheelStats::relinked, kCounter, "", ""},
    {"cancelled", &WheelStats::cancelled, kCounter, "", ""},
    {"fired", &WheelStats::fired, kCounter, "heartwheel_wheel_fired_total",
     "Timing wheel entries that fired."},
    {"cascaded", &WheelStats::cascaded, kCounter, "", ""},
};
static_assert(stat_fields_cover(StatTable<WheelStats>(kWheelFields),
                                sizeof(WheelStats::max_lateness) +
                                    sizeof(WheelStats::total_lateness)));

using L = LoopWheel::LoopStats;
constexpr StatField<L> kLoopFields[] = {
    {"iterations", &L::iterations, kCounter, "heartwheel_loop_iterations_total",
     "Event loop iterations."},
    {"stalls", &L::stalls, kCounter, "heartwheel_loop_stalls_total",
     "Loop iterations whose lag reached the stall threshold."},
    {"expiries_deferred", &L::expiries_deferred, kCounter,
     "heartwheel_loop_expiries_deferred_total",
     "Iterations whose expiry waited for one more poll after a stall."},
    {"budget_exhausted", &L::budget_exhausted, kCounter, "heartwheel_loop_budget_exhausted_total",
     "Iterations that ran out of expiry budget with entries left to fire."},
};
static_assert(stat_fields_cover(StatTable<L>(kLoopFields),
                                sizeof(L::stall_total) + sizeof(L::stall_max) +
                                    sizeof(L::lag_buckets) + sizeof(L::lag_total)));
}  // namespace

StatTable<WheelStats> WheelStats::fields() noexcept { return kWheelFields; }

void WheelStats::merge(const WheelStats& o) noexcept {
  merge_stat_fields(fields(), *this, o);
  max_lateness = std::max(max_lateness, o.max_lateness);
  total_lateness += o.total_lateness;
}

StatTable<L> L::fields() noexcept { return kLoopFields; }

void L::merge(const L& o) noexcept {
  merge_stat_fields(fields(), *this, o);
  stall_total += o.stall_total;
  stall_max = std::max(stall_max, o.stall_max);
  for (std::size_t i = 0; i < lag_buckets.size(); ++i) lag_buckets[i] += o.lag_buckets[i];
  lag_total += o.lag_total;
}

}  // namespace heartwheel
