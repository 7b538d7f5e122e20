// See rpc_service.h.
#include "rpc_service.h"

#include <heartwheel/net/connection.h>
#include <heartwheel/timer/timer_entry.h>

#include <string>

namespace rpcserver {

void WorkerCounters::merge(const WorkerCounters& o) noexcept {
  rpc.merge(o.rpc);
  delayed += o.delayed;
}

namespace {

// An answer waiting on the wheel for --reply-delay. It owns the request's
// Reply; if the connection closes first, the Reply's on_abandon cancels the
// entry and frees it (counted by the handler as a dropped reply).
struct DelayedReply final : heartwheel::TimerEntry {
  DelayedReply(rpc::Reply r, std::string_view p)
      : TimerEntry(&on_due), reply(std::move(r)), payload(p) {}

  static void on_due(heartwheel::TimerEntry& entry) {
    std::unique_ptr<DelayedReply> self(static_cast<DelayedReply*>(&entry));
    self->reply.respond(self->payload);
  }

  rpc::Reply reply;
  std::string payload;
};

}  // namespace

rpc::NetHandlerOptions handler_options(const ServiceOptions& options, WorkerCounters& counters) {
  rpc::NetHandlerOptions o;
  o.heartbeat = options.heartbeat;
  o.max_frame_length = options.max_frame_length;
  const Duration delay = options.reply_delay;
  o.on_request = [delay, &counters](const rpc::Request& req, rpc::Reply reply) {
    if (delay.count() <= 0) {
      reply.respond(req.payload);
      return;
    }
    heartwheel::TimerService& timers = req.connection.timers();
    auto* d = new DelayedReply(std::move(reply), req.payload);
    d->reply.on_abandon([d, &timers] {
      timers.cancel(*d);
      delete d;
    });
    ++counters.delayed;
    timers.schedule(*d, delay);
  };
  o.validate();
  return o;
}

std::unique_ptr<rpc::NetHandler> make_service(const ServiceOptions& options,
                                              WorkerCounters& counters) {
  auto handler = std::make_unique<rpc::NetHandler>(handler_options(options, counters));
  handler->set_publisher([&counters](const rpc::NetHandlerStats& s) { counters.rpc = s; });
  return handler;
}

}  // namespace rpcserver
