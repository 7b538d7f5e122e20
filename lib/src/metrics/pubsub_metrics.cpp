// See heartwheel/metrics/pubsub_metrics.h. Every family comes from the
// counters' field tables (lib/src/pubsub/stats.cpp: HubStats::fields(),
// ChannelStats::fields() for the hubs' deliveries, BusStats::fields()).
// Names follow the net families' conventions (lib/src/metrics/README.md).
// Deliveries carry the outcome names of pubsub::DeliveryOutcome, so a
// dashboard's "not delivered" is the sum of every outcome but delivered.
#include <heartwheel/metrics/pubsub_metrics.h>
#include <heartwheel/metrics/stat_families.h>

namespace heartwheel::metrics {

void write(TextWriter& out, const pubsub::HubStats& s) {
  // The deliveries (ChannelStats) after the publications.
  const auto [subscriptions, encodes] =
      split_after(pubsub::HubStats::fields(), "heartwheel_pubsub_publish_errors_total");
  write_families(out, subscriptions, s);
  write_families(out, pubsub::ChannelStats::fields(), s.delivery);
  write_families(out, encodes, s);
}

void write(TextWriter& out, const pubsub::BusStats& s) {
  write_families(out, pubsub::BusStats::fields(), s);
}

}  // namespace heartwheel::metrics
