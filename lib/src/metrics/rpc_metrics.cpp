// See heartwheel/metrics/rpc_metrics.h. Every family comes from
// rpc::NetHandlerStats::fields() (lib/src/rpc/stats.cpp).
#include <heartwheel/metrics/rpc_metrics.h>
#include <heartwheel/metrics/stat_families.h>

namespace heartwheel::metrics {

void write(TextWriter& out, const rpc::NetHandlerStats& s) {
  write_families(out, rpc::NetHandlerStats::fields(), s);
}

}  // namespace heartwheel::metrics
