// The pub/sub metric families (heartwheel/pubsub/stats.h: write_metrics).
// Every family comes from the counters' field tables (stats.cpp:
// HubStats::fields(), ChannelStats::fields() for the hubs' deliveries,
// BusStats::fields()). Names follow the net families' conventions
// (lib/src/metrics/README.md). Deliveries carry the outcome names of
// DeliveryOutcome, so a dashboard's "not delivered" is the sum of every
// outcome but delivered.
#include <heartwheel/common/metric_families.h>
#include <heartwheel/pubsub/stats.h>

namespace heartwheel::pubsub {

void write_metrics(MetricSink& out, const HubStats& s) {
  // The deliveries (ChannelStats) after the publications.
  const auto [subscriptions, encodes] =
      split_after(HubStats::fields(), "heartwheel_pubsub_publish_errors_total");
  write_stat_families(out, subscriptions, s);
  write_stat_families(out, ChannelStats::fields(), s.delivery);
  write_stat_families(out, encodes, s);
}

void write_metrics(MetricSink& out, const BusStats& s) {
  write_stat_families(out, BusStats::fields(), s);
}

}  // namespace heartwheel::pubsub
