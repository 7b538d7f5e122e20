// heartwheel-push's own Prometheus families (--metrics-listen), beside the
// net families every server exposes: the delayed queue's counters, the HTTP
// API's answers, the SSE streams.
#pragma once

#include <heartwheel/metrics/text_writer.h>

#include "node.h"

namespace pushsrv {

// heartwheel_push_delayed_<counter>_total for every DelayedQueueStats
// counter, heartwheel_push_delayed_held (gauge), heartwheel_push_api_*_total,
// heartwheel_push_sse_streams (gauge), heartwheel_push_sse_*_total.
void write_metrics(heartwheel::metrics::TextWriter& out, const NodeStats& stats);

}  // namespace pushsrv
