// See heartwheel/metrics/rpc_metrics.h.
#include <heartwheel/metrics/rpc_metrics.h>

namespace heartwheel::metrics {

void write(TextWriter& out, const rpc::NetHandlerStats& s) {
  out.family("heartwheel_rpc_frames_received_total", Type::counter,
             "RPC frames read, by type (unexpected: a request without a handler or a reply "
             "without a call).");
  const std::pair<const char*, std::uint64_t> received[] = {{"request", s.requests},
                                                            {"reply", s.replies},
                                                            {"ping", s.pings_received},
                                                            {"pong", s.pongs_received},
                                                            {"unexpected", s.unexpected_frames}};
  for (const auto& [type, n] : received) out.sample(n, {{"type", type}});
  out.family("heartwheel_rpc_frames_sent_total", Type::counter,
             "RPC frames written, by type (each ping received is answered with a pong).");
  const std::pair<const char*, std::uint64_t> sent[] = {{"response", s.responses},
                                                        {"error", s.errors_sent},
                                                        {"request", s.calls_sent},
                                                        {"ping", s.pings_sent},
                                                        {"pong", s.pings_received}};
  for (const auto& [type, n] : sent) out.sample(n, {{"type", type}});
  out.counter("heartwheel_rpc_pong_timeouts_total",
              "Connections closed because a ping went unanswered.", s.pong_timeouts);
  out.counter("heartwheel_rpc_protocol_errors_total",
              "Connections closed for a malformed or oversized frame.", s.protocol_errors);
  out.counter("heartwheel_rpc_dropped_replies_total",
              "Answers owed to connections that closed first.", s.dropped_replies);
  out.counter("heartwheel_rpc_writes_total", "Batched writes (Connection::write calls).", s.writes);
  out.counter("heartwheel_rpc_write_refusals_total",
              "Batches refused by a full write queue (the connection closed as slow_consumer).",
              s.write_refusals);
}

}  // namespace heartwheel::metrics
