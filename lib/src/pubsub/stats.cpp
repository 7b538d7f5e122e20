// Merging and the JSON form of the pub/sub counters (stats.h). Written by
// hand, as the net layer's are; the keys are the field names.
#include <heartwheel/pubsub/stats.h>

#include <sstream>

namespace heartwheel::pubsub {

void ChannelStats::merge(const ChannelStats& o) noexcept {
  fanned_out += o.fanned_out;
  deliveries += o.deliveries;
  presence_deliveries += o.presence_deliveries;
  skips += o.skips;
  slow_closes += o.slow_closes;
  dropped += o.dropped;
}

void HubStats::merge(const HubStats& o) noexcept {
  channels += o.channels;
  subscriptions += o.subscriptions;
  subscribes += o.subscribes;
  unsubscribes += o.unsubscribes;
  subscribe_errors += o.subscribe_errors;
  recovered += o.recovered;
  not_recovered += o.not_recovered;
  publications += o.publications;
  publish_errors += o.publish_errors;
  events += o.events;
  stale_events += o.stale_events;
  encodes += o.encodes;
  encode_errors += o.encode_errors;
  delivery.merge(o.delivery);
  subscriber_errors += o.subscriber_errors;
  wakeups += o.wakeups;
  hubs += o.hubs;
}

void BusStats::merge(const BusStats& o) noexcept {
  hubs += o.hubs;
  channels += o.channels;
  history_publications += o.history_publications;
  history_bytes += o.history_bytes;
  publications += o.publications;
  epochs += o.epochs;
  channels_freed += o.channels_freed;
  bad_channel_options += o.bad_channel_options;
  channels_refused += o.channels_refused;
  history_evictions += o.history_evictions;
}

namespace {
void channel_fields(std::ostream& o, const ChannelStats& s) {
  o << "\"fanned_out\":" << s.fanned_out << ",\"deliveries\":" << s.deliveries
    << ",\"presence_deliveries\":" << s.presence_deliveries << ",\"skips\":" << s.skips
    << ",\"slow_closes\":" << s.slow_closes << ",\"dropped\":" << s.dropped;
}
}  // namespace

std::string to_json(const ChannelStats& s) {
  std::ostringstream o;
  o << '{';
  channel_fields(o, s);
  o << '}';
  return o.str();
}

std::string to_json(const HubStats& s) {
  std::ostringstream o;
  o << "{\"channels\":" << s.channels << ",\"subscriptions\":" << s.subscriptions
    << ",\"subscribes\":" << s.subscribes << ",\"unsubscribes\":" << s.unsubscribes
    << ",\"subscribe_errors\":" << s.subscribe_errors << ",\"recovered\":" << s.recovered
    << ",\"not_recovered\":" << s.not_recovered << ",\"publications\":" << s.publications
    << ",\"publish_errors\":" << s.publish_errors << ",\"events\":" << s.events
    << ",\"stale_events\":" << s.stale_events << ",\"encodes\":" << s.encodes
    << ",\"encode_errors\":" << s.encode_errors << ',';
  channel_fields(o, s.delivery);
  o << ",\"subscriber_errors\":" << s.subscriber_errors << ",\"wakeups\":" << s.wakeups
    << ",\"hubs\":" << s.hubs << '}';
  return o.str();
}

std::string to_json(const BusStats& s) {
  std::ostringstream o;
  o << "{\"hubs\":" << s.hubs << ",\"channels\":" << s.channels
    << ",\"history_publications\":" << s.history_publications
    << ",\"history_bytes\":" << s.history_bytes << ",\"publications\":" << s.publications
    << ",\"epochs\":" << s.epochs << ",\"channels_freed\":" << s.channels_freed
    << ",\"bad_channel_options\":" << s.bad_channel_options
    << ",\"channels_refused\":" << s.channels_refused
    << ",\"history_evictions\":" << s.history_evictions << '}';
  return o.str();
}

}  // namespace heartwheel::pubsub
