// The pub/sub counters' field tables (heartwheel/common/stat_fields.h), their
// merging and JSON forms (stats.h). The Prometheus names and help are
// lib/src/metrics/README.md's; the keys are the field names.
#include <heartwheel/pubsub/stats.h>

namespace heartwheel::pubsub {

namespace {
constexpr auto kCounter = StatKind::counter;
constexpr auto kGauge = StatKind::gauge;

// A hub's deliveries (HubStats::delivery): its families are the hub's.
constexpr StatField<ChannelStats> kChannelFields[] = {
    {"fanned_out", &ChannelStats::fanned_out, kCounter, "heartwheel_pubsub_fanouts_total",
     "Publications a hub fanned out to its local subscribers (one per publication per hub with "
     "subscribers of the channel)."},
    {"deliveries", &ChannelStats::deliveries, kCounter, "heartwheel_pubsub_deliveries_total",
     "Publications handed to subscribers, by outcome: delivered, skipped (slow consumer, policy "
     "skip), closed (slow consumer, policy close), dropped (subscriber gone, failed or threw, or "
     "the encoder threw).",
     "outcome", "delivered"},
    {"skips", &ChannelStats::skips, kCounter, "heartwheel_pubsub_deliveries_total", "", "outcome",
     "skipped"},
    {"slow_closes", &ChannelStats::slow_closes, kCounter, "heartwheel_pubsub_deliveries_total", "",
     "outcome", "closed"},
    {"dropped", &ChannelStats::dropped, kCounter, "heartwheel_pubsub_deliveries_total", "",
     "outcome", "dropped"},
    {"presence_deliveries", &ChannelStats::presence_deliveries, kCounter,
     "heartwheel_pubsub_presence_deliveries_total",
     "Presence events (join, leave) delivered to subscribers."},
};
static_assert(stat_fields_cover(StatTable<ChannelStats>(kChannelFields), 0));

constexpr StatField<HubStats> kHubFields[] = {
    {"subscriptions", &HubStats::subscriptions, kGauge, "heartwheel_pubsub_subscriptions",
     "Subscriptions held by the hubs now."},
    {"channels", &HubStats::channels, kGauge, "heartwheel_pubsub_hub_channels",
     "Channels with subscribers, counted once per hub that has some (a channel with subscribers "
     "on two worker loops counts twice)."},
    {"subscribes", &HubStats::subscribes, kCounter, "heartwheel_pubsub_subscribes_total",
     "Subscribes accepted."},
    {"unsubscribes", &HubStats::unsubscribes, kCounter, "heartwheel_pubsub_unsubscribes_total",
     "Unsubscribes (incl. at disconnect)."},
    {"subscribe_errors", &HubStats::subscribe_errors, kCounter,
     "heartwheel_pubsub_subscribe_errors_total",
     "Subscribes refused: channel name, channel limit, already subscribed."},
    {"recovered", &HubStats::recovered, kCounter, "heartwheel_pubsub_recoveries_total",
     "Subscribes with a position ({offset, epoch}), by result: recovered (got everything "
     "missed) or not_recovered (history lost or too old).",
     "result", "recovered"},
    {"not_recovered", &HubStats::not_recovered, kCounter, "heartwheel_pubsub_recoveries_total", "",
     "result", "not_recovered"},
    {"publications", &HubStats::publications, kCounter, "heartwheel_pubsub_publications_total",
     "Publications published through the hubs."},
    {"publish_errors", &HubStats::publish_errors, kCounter,
     "heartwheel_pubsub_publish_errors_total", "Publishes refused: channel name, data size."},
    {"encodes", &HubStats::encodes, kCounter, "heartwheel_pubsub_encodes_total",
     "Events encoded for local subscribers (once per event per hub, whatever the number of "
     "subscribers)."},
    {"encode_errors", &HubStats::encode_errors, kCounter, "heartwheel_pubsub_encode_errors_total",
     "Encoder calls that threw (the event reached no local subscriber)."},
    {"subscriber_errors", &HubStats::subscriber_errors, kCounter,
     "heartwheel_pubsub_subscriber_errors_total",
     "Subscriber callbacks that threw (counted as dropped deliveries too)."},
    {"events", &HubStats::events, kCounter, "heartwheel_pubsub_events_total",
     "Events the hubs took from their inboxes."},
    {"stale_events", &HubStats::stale_events, kCounter, "heartwheel_pubsub_stale_events_total",
     "Of those, events for channels with no local subscriber any more."},
    {"wakeups", &HubStats::wakeups, kCounter, "heartwheel_pubsub_wakeups_total",
     "Hub inbox drains (one per batch of events)."},
    {"hubs", &HubStats::hubs, kGauge, "", ""},  // JSON only: heartwheel_loops says it
};
static_assert(stat_fields_cover(StatTable<HubStats>(kHubFields), sizeof(ChannelStats)));

constexpr StatField<BusStats> kBusFields[] = {
    {"hubs", &BusStats::hubs, kGauge, "heartwheel_pubsub_hubs",
     "Hubs (one per worker loop) attached to the bus now."},
    {"channels", &BusStats::channels, kGauge, "heartwheel_pubsub_channels",
     "Channels the bus holds state for now (subscribers or history)."},
    {"history_publications", &BusStats::history_publications, kGauge,
     "heartwheel_pubsub_history_publications", "Publications kept in history rings now."},
    {"history_bytes", &BusStats::history_bytes, kGauge, "heartwheel_pubsub_history_bytes",
     "Memory the publications kept in history rings hold now: each one's object, its "
     "strings (data, client info, channel name, epoch) as malloc holds them, and its ring "
     "slot."},
    {"publications", &BusStats::publications, kCounter, "heartwheel_pubsub_bus_publications_total",
     "Publications the bus took (from any hub or publisher)."},
    {"unheard", &BusStats::unheard, kCounter, "heartwheel_pubsub_bus_publications_unheard_total",
     "Publications to a channel with no state and no history configured before subscribers: "
     "they reached no one and were kept nowhere (offset 0)."},
    {"epochs", &BusStats::epochs, kCounter, "heartwheel_pubsub_epochs_total",
     "Channel states made, each starting a new epoch (history lost before it)."},
    {"channels_freed", &BusStats::channels_freed, kCounter,
     "heartwheel_pubsub_channels_freed_total",
     "Channel states freed (no subscribers and no history left)."},
    {"bad_channel_options", &BusStats::bad_channel_options, kCounter,
     "heartwheel_pubsub_bad_channel_options_total",
     "Per-channel options refused by validation (the default options used instead)."},
    {"channels_refused", &BusStats::channels_refused, kCounter,
     "heartwheel_pubsub_channels_refused_total",
     "New channels refused because the bus held max_channels (--max-channels)."},
    {"history_evictions", &BusStats::history_evictions, kCounter,
     "heartwheel_pubsub_history_evictions_total",
     "Publications dropped from histories to stay under max_history_bytes (--max-history-bytes)."},
    {"channels_evicted", &BusStats::channels_evicted, kCounter,
     "heartwheel_pubsub_channels_evicted_total",
     "Channels without subscribers (kept only by their history) freed before their time to make "
     "room for a new channel at max_channels (--max-channels), oldest first."},
};
static_assert(stat_fields_cover(StatTable<BusStats>(kBusFields), 0));

template <class S>
std::string json_object(StatTable<S> table, const S& s) {
  std::string out = "{";
  append_stat_fields_json(out, table, s);
  out += '}';
  return out;
}
}  // namespace

StatTable<ChannelStats> ChannelStats::fields() noexcept { return kChannelFields; }
StatTable<HubStats> HubStats::fields() noexcept { return kHubFields; }
StatTable<BusStats> BusStats::fields() noexcept { return kBusFields; }

void ChannelStats::merge(const ChannelStats& o) noexcept {
  merge_stat_fields<ChannelStats>(kChannelFields, *this, o);
}

void HubStats::merge(const HubStats& o) noexcept {
  merge_stat_fields<HubStats>(kHubFields, *this, o);
  delivery.merge(o.delivery);
}

void BusStats::merge(const BusStats& o) noexcept { merge_stat_fields<BusStats>(kBusFields, *this, o); }

std::string to_json(const ChannelStats& s) { return json_object<ChannelStats>(kChannelFields, s); }

std::string to_json(const HubStats& s) {
  std::string out = "{";
  append_stat_fields_json<HubStats>(out, kHubFields, s);
  append_stat_fields_json<ChannelStats>(out, kChannelFields, s.delivery);
  out += '}';
  return out;
}

std::string to_json(const BusStats& s) { return json_object<BusStats>(kBusFields, s); }

}  // namespace heartwheel::pubsub
