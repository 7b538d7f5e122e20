// A pool's metric families (heartwheel/net/pool_stats.h: write_metrics). They
// walk EndpointStats' table, so a field added there is exposed here without
// a change.
#include <heartwheel/net/pool_stats.h>

namespace heartwheel::net {

void write_metrics(MetricSink& out, std::span<const PoolEndpoints> pools) {
  const StatTable<EndpointStats> table = EndpointStats::fields();
  // A family is a run of rows with one metric name (stat_fields.h).
  for (std::size_t first = 0; first < table.size();) {
    std::size_t end = first + 1;
    while (end < table.size() && table[end].metric == table[first].metric) ++end;
    const auto& head = table[first];
    if (!head.metric.empty()) {
      out.family(head.metric,
                 head.kind == StatKind::gauge ? MetricType::gauge : MetricType::counter, head.help);
      for (const PoolEndpoints& p : pools)
        for (const EndpointInfo& e : p.endpoints)
          for (std::size_t r = first; r < end; ++r) {
            const auto& row = table[r];
            const std::uint64_t value = e.stats.*row.member;
            if (row.label_name.empty()) {
              out.sample(value, {{"pool", p.name}, {"endpoint", e.address}});
            } else {
              out.sample(
                  value,
                  {{"pool", p.name}, {"endpoint", e.address}, {row.label_name, row.label_value}});
            }
          }
    }
    first = end;
  }
  out.family("heartwheel_pool_endpoint_state", MetricType::gauge,
             "1 for the state each endpoint of a pool is in (warming, healthy, ejected, probing, "
             "draining).");
  for (const PoolEndpoints& p : pools)
    for (const EndpointInfo& e : p.endpoints)
      out.sample(std::uint64_t{1},
                 {{"pool", p.name}, {"endpoint", e.address}, {"state", to_string(e.state)}});
}

}  // namespace heartwheel::net
