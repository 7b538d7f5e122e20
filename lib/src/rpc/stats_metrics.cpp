// NetHandlerStats' metric families (heartwheel/rpc/net_handler.h:
// write_metrics): every family comes from NetHandlerStats::fields()
// (stats.cpp).
#include <heartwheel/common/metric_families.h>
#include <heartwheel/rpc/net_handler.h>

namespace heartwheel::rpc {

void write_metrics(MetricSink& out, const NetHandlerStats& s) {
  write_stat_families(out, NetHandlerStats::fields(), s);
}

}  // namespace heartwheel::rpc
