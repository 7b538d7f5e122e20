// heartwheel/metrics/rpc_metrics.h - an RPC server's frame and heartbeat
// counters (rpc::NetHandlerStats) as Prometheus metric families
// (heartwheel_rpc_*). Every family: lib/src/metrics/README.md.
//
// `stats` is usually the merge of every loop's rpc::NetHandler::stats()
// (copied on each loop's thread, e.g. into a WorkerBoard from
// net::WorkersOptions::on_publish).
//
// Threads: any (it reads a copy).
#pragma once

#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/rpc/net_handler.h>

namespace heartwheel::metrics {

// Appends the heartwheel_rpc_* families. Throws std::logic_error if `out`
// already has one of them.
void write(TextWriter& out, const rpc::NetHandlerStats& stats);

}  // namespace heartwheel::metrics
