// The Redis links' metric families (heartwheel/redis/stats.h:
// write_metrics). They walk the layer's one table of fields
// (LinkStats::fields()), a sample per link, so a field added there is
// exposed without a change here.
#include <heartwheel/redis/stats.h>

namespace heartwheel::redis {

namespace {

template <class Value>
void per_master(MetricSink& out, std::span<const LinkMetrics> links, std::string_view name,
                MetricType type, std::string_view help, Value value) {
  out.family(name, type, help);
  for (const LinkMetrics& l : links)
    for (const MasterStats& m : l.masters)
      out.sample(static_cast<std::uint64_t>(value(m)), {{"link", l.name}, {"master", m.address}});
}

}  // namespace

void write_metrics(MetricSink& out, std::span<const LinkMetrics> links) {
  for (const StatField<LinkStats>& f : LinkStats::fields()) {
    out.family(f.metric, f.kind == StatKind::gauge ? MetricType::gauge : MetricType::counter,
               f.help);
    for (const LinkMetrics& l : links) out.sample(l.stats.*f.member, {{"link", l.name}});
  }
  per_master(out, links, "heartwheel_redis_master_connected", MetricType::gauge,
             "1 when the link's connection to this Redis Cluster master is open.",
             [](const MasterStats& m) { return m.connected ? 1 : 0; });
  per_master(out, links, "heartwheel_redis_master_slots", MetricType::gauge,
             "Slots this master owns in the link's slot map.",
             [](const MasterStats& m) { return m.slots; });
  per_master(out, links, "heartwheel_redis_master_pending", MetricType::gauge,
             "Commands in flight or waiting for this master (a subscriber: channels wanted there).",
             [](const MasterStats& m) { return m.pending; });
  per_master(out, links, "heartwheel_redis_master_disconnects_total", MetricType::counter,
             "Connections to this master closed.",
             [](const MasterStats& m) { return m.link.disconnects; });
}

}  // namespace heartwheel::redis
