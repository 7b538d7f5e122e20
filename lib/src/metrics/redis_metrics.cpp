// See heartwheel/metrics/redis_metrics.h. The families walk the redis
// layer's one table of fields (kLinkStatsFields), so a field added there is
// exposed here without a change.
#include <heartwheel/metrics/redis_metrics.h>

#include <string>

namespace heartwheel::metrics {

namespace {

std::string family_name(const redis::LinkStatsField& f) {
  std::string name = std::string("heartwheel_redis_") + f.name;
  const std::string_view suffix = "_total";
  if (!f.gauge && !(name.size() > suffix.size() &&
                    std::string_view(name).substr(name.size() - suffix.size()) == suffix))
    name += suffix;
  return name;
}

template <class Value>
void per_master(TextWriter& out, std::span<const RedisLink> links, std::string_view name,
                Type type, std::string_view help, Value value) {
  out.family(name, type, help);
  for (const RedisLink& l : links)
    for (const redis::MasterStats& m : l.masters)
      out.sample(static_cast<std::uint64_t>(value(m)), {{"link", l.name}, {"master", m.address}});
}

}  // namespace

void write(TextWriter& out, std::span<const RedisLink> links) {
  for (const redis::LinkStatsField& f : redis::kLinkStatsFields) {
    out.family(family_name(f), f.gauge ? Type::gauge : Type::counter, std::string(f.help) + ".");
    for (const RedisLink& l : links) out.sample(l.stats.*f.member, {{"link", l.name}});
  }
  per_master(out, links, "heartwheel_redis_master_connected", Type::gauge,
             "1 when the link's connection to this Redis Cluster master is open.",
             [](const redis::MasterStats& m) { return m.connected ? 1 : 0; });
  per_master(out, links, "heartwheel_redis_master_slots", Type::gauge,
             "Slots this master owns in the link's slot map.",
             [](const redis::MasterStats& m) { return m.slots; });
  per_master(out, links, "heartwheel_redis_master_pending", Type::gauge,
             "Commands in flight or waiting for this master (a subscriber: channels wanted there).",
             [](const redis::MasterStats& m) { return m.pending; });
  per_master(out, links, "heartwheel_redis_master_disconnects_total", Type::counter,
             "Connections to this master closed.",
             [](const redis::MasterStats& m) { return m.link.disconnects; });
}

}  // namespace heartwheel::metrics
