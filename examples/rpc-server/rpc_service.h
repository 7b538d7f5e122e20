// The RPC server's application: an rpc::NetHandler per worker loop whose
// requests are answered with their own payload, at once or after
// --reply-delay (the answer waits on the loop's timing wheel, holding the
// request's rpc::Reply). Frames, heartbeats, batching and drain are the
// library's (heartwheel/rpc/net_handler.h).
#pragma once

#include <heartwheel/net/heartbeat.h>
#include <heartwheel/rpc/frame.h>
#include <heartwheel/rpc/net_handler.h>

#include <cstdint>
#include <memory>

namespace rpcserver {

using heartwheel::Duration;
namespace net = heartwheel::net;
namespace rpc = heartwheel::rpc;

struct ServiceOptions {
  Duration reply_delay{0};
  std::size_t max_frame_length = rpc::kDefaultMaxFrameLength;
  // interval 0 switches heartbeats (and the pong_timeout close) off.
  net::HeartbeatConfig heartbeat;
};

// One worker's counters: written on its loop thread (the handler's are
// copied in whenever a connection closes and when it is destroyed), read
// after the worker joined.
struct WorkerCounters {
  rpc::NetHandlerStats rpc;
  std::uint64_t delayed = 0;  // answers scheduled on the wheel (--reply-delay)

  void merge(const WorkerCounters& other) noexcept;
};

// The handler's options for `options` (validated: std::invalid_argument),
// answering into `counters`.
rpc::NetHandlerOptions handler_options(const ServiceOptions& options, WorkerCounters& counters);

// One worker's handler.
std::unique_ptr<rpc::NetHandler> make_service(const ServiceOptions& options,
                                              WorkerCounters& counters);

}  // namespace rpcserver
