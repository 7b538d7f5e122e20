// heartwheel/push/delayed_stats.h - the counters of a DelayedQueue.
//
// Every push a queue accepted ends up counted: scheduled, then (on whichever
// node) loaded, fired, claimed or claimed_elsewhere, delivered, acked; or
// cancelled. Errors are counted where they happened; redis_errors is every
// failed command of any kind. merge() sums queues (workers, nodes).
// Threads: plain values.
#pragma once

#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>

#include <cstdint>
#include <string>

namespace heartwheel::push {

struct DelayedQueueStats {
  std::uint64_t queues = 1;     // queues merged into these figures
  std::uint64_t held = 0;       // gauge: pushes in the wheel now
  std::uint64_t scheduled = 0;  // stored in Redis (schedule callback without error)
  std::uint64_t schedule_errors = 0;
  std::uint64_t schedule_capped = 0;  // refused: the owner had max_pending_per_owner pending
  std::uint64_t loads = 0;        // window loads completed
  std::uint64_t load_errors = 0;  // loads that failed (retried)
  std::uint64_t loaded = 0;       // pushes put into the wheel (by a load, a schedule or a reap)
  std::uint64_t fired = 0;        // wheel entries that came due (a claim follows)
  std::uint64_t claimed = 0;      // claims won: this node delivers
  std::uint64_t claimed_elsewhere = 0;  // claims that found the push gone (another node, cancel)
  std::uint64_t claim_retries = 0;      // claims that failed and were tried again
  std::uint64_t lost_claims = 0;     // claim replies lost (disconnected / timed out): may have run
  std::uint64_t delivered = 0;       // deliver() returned
  std::uint64_t deliver_errors = 0;  // deliver() threw: left for the lease
  std::uint64_t acked = 0;           // acknowledgements Redis confirmed
  std::uint64_t requeued = 0;        // expired claims this node's reaper put back
  std::uint64_t cancelled = 0;       // cancel() that removed a push
  std::uint64_t cancel_missed = 0;   // cancel() of an unknown / claimed / delivered push
  std::uint64_t redis_errors = 0;    // failed commands of every kind

  void merge(const DelayedQueueStats& other) noexcept;
  // The fields' table (heartwheel/common/stat_fields.h): JSON keys, kind,
  // Prometheus families (heartwheel_push_delayed_*) and help;
  // lib/src/push/stats.cpp.
  static StatTable<DelayedQueueStats> fields() noexcept;
};

// One JSON object with every field.
std::string to_json(const DelayedQueueStats& stats);

// Appends the heartwheel_push_delayed_* families (held, a gauge; every
// counter as heartwheel_push_delayed_<field>_total) into any sink
// (metrics::write(out, stats) for Prometheus). Throws as the sink
// (TextWriter: std::logic_error if `out` already has one of them).
void write_metrics(MetricSink& out, const DelayedQueueStats& stats);

}  // namespace heartwheel::push
