// heartwheel/pubsub/stats.h - the pub/sub layer's counters.
//
// HubStats: one hub's counters, plain integers updated on its loop thread
// without atomics (read them there: Hub::stats()). merge() adds another hub's
// (other loops, other processes), as net::LoopSnapshot does, so a metrics
// endpoint can sum the workers. ChannelStats: the same delivery counters for
// one channel on one hub (Hub::channel_stats()). BusStats: the process-wide
// store, from Bus::stats() on any thread.
// Every event a subscriber did not get is counted somewhere: skips,
// slow_closes, dropped, encode_errors or subscriber_errors.
#pragma once

#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>

#include <cstdint>
#include <string>

namespace heartwheel::pubsub {

struct ChannelStats {
  std::uint64_t fanned_out = 0;  // publications this hub fanned out on the channel
  std::uint64_t deliveries = 0;  // (subscriber, publication) pairs delivered
  std::uint64_t presence_deliveries = 0;
  std::uint64_t skips = 0;        // DeliveryOutcome::skipped
  std::uint64_t slow_closes = 0;  // DeliveryOutcome::closed
  std::uint64_t dropped = 0;      // DeliveryOutcome::dropped, throws, failed encodes

  void merge(const ChannelStats& other) noexcept;
  // The std::uint64_t fields' table (heartwheel/common/stat_fields.h).
  static StatTable<ChannelStats> fields() noexcept;
};

struct HubStats {
  // Gauges, now.
  std::uint64_t channels = 0;       // channels with local subscribers
  std::uint64_t subscriptions = 0;  // local subscriptions

  // Counters since the hub was made.
  std::uint64_t subscribes = 0;
  std::uint64_t unsubscribes = 0;
  std::uint64_t subscribe_errors = 0;  // refused: name, channel limit, already subscribed
  std::uint64_t recovered = 0;         // subscribes with a position that got everything missed
  std::uint64_t not_recovered = 0;     // ... that did not (recovered: false)
  std::uint64_t publications = 0;      // published through this hub
  std::uint64_t publish_errors = 0;    // refused: name, size
  std::uint64_t events = 0;            // envelopes taken from the inbox
  std::uint64_t stale_events = 0;      // of which for no local subscriber (left, or before joining)
  std::uint64_t encodes = 0;           // encoder calls (one per event per hub)
  std::uint64_t encode_errors = 0;     // encoder threw: the event went to no local subscriber
  ChannelStats delivery;               // summed over channels (incl. freed ones)
  std::uint64_t subscriber_errors = 0;  // callbacks that threw (counted as dropped too)
  std::uint64_t wakeups = 0;            // inbox drains (one per uv_async batch, or poll())
  std::uint64_t hubs = 1;               // how many hubs were merged in

  void merge(const HubStats& other) noexcept;
  // The std::uint64_t fields' table (heartwheel/common/stat_fields.h).
  static StatTable<HubStats> fields() noexcept;
};

struct BusStats {
  std::uint64_t hubs = 0;                  // attached now
  std::uint64_t channels = 0;              // channels with state now
  std::uint64_t history_publications = 0;  // held in rings now
  std::uint64_t history_bytes = 0;         // the memory they hold (history_ring.h)
  std::uint64_t publications = 0;          // published, total
  std::uint64_t unheard = 0;               // of which kept nowhere: no state, nobody listening
  std::uint64_t epochs = 0;                // channel states made (each a new epoch)
  std::uint64_t channels_freed = 0;        // channel states freed
  std::uint64_t bad_channel_options = 0;   // channel_options results replaced by the default
  std::uint64_t channels_refused = 0;      // new channels refused at BusOptions::max_channels
  std::uint64_t history_evictions = 0;     // publications dropped for max_history_bytes
  std::uint64_t channels_evicted = 0;      // orphans freed early to make room at max_channels

  void merge(const BusStats& other) noexcept;
  // The std::uint64_t fields' table (heartwheel/common/stat_fields.h).
  static StatTable<BusStats> fields() noexcept;
};

// One JSON object each; the keys are the field names above (ChannelStats
// fields inline for HubStats::delivery).
std::string to_json(const HubStats& stats);
std::string to_json(const BusStats& stats);
std::string to_json(const ChannelStats& stats);

// The heartwheel_pubsub_* families into any sink (metrics::write(out, stats)
// for Prometheus; every family, its type, labels and meaning:
// lib/src/metrics/README.md). Two sources, two calls:
// - HubStats, usually the merge of every loop's Hub::stats() (copied on each
//   loop's thread, e.g. into a metrics::WorkerBoard): subscriptions,
//   subscribes, recoveries, publications through the hubs, fan-out,
//   deliveries by outcome. A server with no hub yet writes HubStats{} (zeros).
// - BusStats, from Bus::stats() (any thread): the process-wide store: hubs
//   attached, channels, history held, epochs.
// Every delivery outcome is written, zeros included, so rate() works from
// the first scrape. Throws as the sink (TextWriter: std::logic_error if
// `out` already has one of them). Threads: any (each reads a copy). Cost:
// ~25 samples, a few microseconds.
void write_metrics(MetricSink& out, const HubStats& stats);
void write_metrics(MetricSink& out, const BusStats& stats);

}  // namespace heartwheel::pubsub
