// See heartwheel/metrics/pubsub_metrics.h. Names follow the net families'
// conventions (lib/src/metrics/README.md). Deliveries carry the outcome names
// of pubsub::DeliveryOutcome, so a dashboard's "not delivered" is the sum of
// every outcome but delivered.
#include <heartwheel/metrics/pubsub_metrics.h>

namespace heartwheel::metrics {

namespace {

void write_subscriptions(TextWriter& out, const pubsub::HubStats& s) {
  out.gauge("heartwheel_pubsub_subscriptions", "Subscriptions held by the hubs now.",
            s.subscriptions);
  out.gauge("heartwheel_pubsub_hub_channels",
            "Channels with subscribers, counted once per hub that has some (a channel with "
            "subscribers on two worker loops counts twice).",
            s.channels);
  out.counter("heartwheel_pubsub_subscribes_total", "Subscribes accepted.", s.subscribes);
  out.counter("heartwheel_pubsub_unsubscribes_total", "Unsubscribes (incl. at disconnect).",
              s.unsubscribes);
  out.counter("heartwheel_pubsub_subscribe_errors_total",
              "Subscribes refused: channel name, channel limit, already subscribed.",
              s.subscribe_errors);
  out.family("heartwheel_pubsub_recoveries_total", Type::counter,
             "Subscribes with a position ({offset, epoch}), by result: recovered (got everything "
             "missed) or not_recovered (history lost or too old).");
  out.sample(s.recovered, {{"result", "recovered"}});
  out.sample(s.not_recovered, {{"result", "not_recovered"}});
}

void write_publications(TextWriter& out, const pubsub::HubStats& s) {
  out.counter("heartwheel_pubsub_publications_total", "Publications published through the hubs.",
              s.publications);
  out.counter("heartwheel_pubsub_publish_errors_total",
              "Publishes refused: channel name, data size.", s.publish_errors);
  out.counter("heartwheel_pubsub_fanouts_total",
              "Publications a hub fanned out to its local subscribers (one per publication per "
              "hub with subscribers of the channel).",
              s.delivery.fanned_out);
  out.family("heartwheel_pubsub_deliveries_total", Type::counter,
             "Publications handed to subscribers, by outcome: delivered, skipped (slow consumer, "
             "policy skip), closed (slow consumer, policy close), dropped (subscriber gone, "
             "failed or threw, or the encoder threw).");
  out.sample(s.delivery.deliveries, {{"outcome", "delivered"}});
  out.sample(s.delivery.skips, {{"outcome", "skipped"}});
  out.sample(s.delivery.slow_closes, {{"outcome", "closed"}});
  out.sample(s.delivery.dropped, {{"outcome", "dropped"}});
  out.counter("heartwheel_pubsub_presence_deliveries_total",
              "Presence events (join, leave) delivered to subscribers.",
              s.delivery.presence_deliveries);
  out.counter("heartwheel_pubsub_encodes_total",
              "Events encoded for local subscribers (once per event per hub, whatever the number "
              "of subscribers).",
              s.encodes);
  out.counter("heartwheel_pubsub_encode_errors_total",
              "Encoder calls that threw (the event reached no local subscriber).", s.encode_errors);
  out.counter("heartwheel_pubsub_subscriber_errors_total",
              "Subscriber callbacks that threw (counted as dropped deliveries too).",
              s.subscriber_errors);
  out.counter("heartwheel_pubsub_events_total", "Events the hubs took from their inboxes.",
              s.events);
  out.counter("heartwheel_pubsub_stale_events_total",
              "Of those, events for channels with no local subscriber any more.", s.stale_events);
  out.counter("heartwheel_pubsub_wakeups_total", "Hub inbox drains (one per batch of events).",
              s.wakeups);
}

}  // namespace

void write(TextWriter& out, const pubsub::HubStats& s) {
  write_subscriptions(out, s);
  write_publications(out, s);
}

void write(TextWriter& out, const pubsub::BusStats& s) {
  out.gauge("heartwheel_pubsub_hubs", "Hubs (one per worker loop) attached to the bus now.",
            s.hubs);
  out.gauge("heartwheel_pubsub_channels",
            "Channels the bus holds state for now (subscribers or history).", s.channels);
  out.gauge("heartwheel_pubsub_history_publications", "Publications kept in history rings now.",
            s.history_publications);
  out.gauge("heartwheel_pubsub_history_bytes",
            "Bytes of the publications kept in history rings now (data and client info).",
            s.history_bytes);
  out.counter("heartwheel_pubsub_bus_publications_total",
              "Publications the bus assigned an offset (from any hub or publisher).",
              s.publications);
  out.counter("heartwheel_pubsub_epochs_total",
              "Channel states made, each starting a new epoch (history lost before it).", s.epochs);
  out.counter("heartwheel_pubsub_channels_freed_total",
              "Channel states freed (no subscribers and no history left).", s.channels_freed);
  out.counter("heartwheel_pubsub_bad_channel_options_total",
              "Per-channel options refused by validation (the default options used instead).",
              s.bad_channel_options);
}

}  // namespace heartwheel::metrics
