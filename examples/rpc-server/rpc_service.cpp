// See rpc_service.h.
#include "rpc_service.h"

#include <uv.h>

#include <heartwheel/error.h>

namespace rpcserver {

namespace rpc = heartwheel::rpc;
using heartwheel::TimePoint;

namespace {
// The PING payload clock: monotonic nanoseconds, finer than the loop's cached ms.
TimePoint hr_now() noexcept { return TimePoint(std::chrono::nanoseconds(uv_hrtime())); }
}  // namespace

void RpcCounters::merge(const RpcCounters& o) noexcept {
  requests += o.requests;
  responses += o.responses;
  errors_sent += o.errors_sent;
  delayed += o.delayed;
  dropped_replies += o.dropped_replies;
  pings_received += o.pings_received;
  pings_sent += o.pings_sent;
  pongs_received += o.pongs_received;
  unexpected_frames += o.unexpected_frames;
  protocol_errors += o.protocol_errors;
  frames_too_large += o.frames_too_large;
}

// A response waiting on the wheel for --reply-delay. Linked into its
// session so a closing connection cancels what it still owes.
struct RpcService::DelayedReply final : heartwheel::TimerEntry {
  DelayedReply() : TimerEntry(&RpcService::on_reply_due) {}
  RpcService* service = nullptr;
  Session* session = nullptr;
  DelayedReply* prev = nullptr;
  DelayedReply* next = nullptr;
  std::uint64_t id = 0;
  std::string payload;
};

struct RpcService::Session {
  Session(net::Connection& c, std::size_t max_frame) : conn(c), decoder(max_frame) {}
  net::Connection& conn;
  rpc::FrameDecoder decoder;
  DelayedReply* delayed = nullptr;  // owed responses, newest first
  std::size_t delayed_count = 0;
  std::uint64_t ping_seq = 0;

  void link(DelayedReply& r) noexcept {
    r.next = delayed;
    if (delayed) delayed->prev = &r;
    delayed = &r;
    // A request in flight (no deadline of its own): graceful drain waits for it.
    if (delayed_count++ == 0) conn.begin_request(Duration{0});
  }
  void unlink(DelayedReply& r) noexcept {
    if (r.prev) {
      r.prev->next = r.next;
    } else {
      delayed = r.next;
    }
    if (r.next) r.next->prev = r.prev;
  }
};

net::ConnectionOptions connection_options_for(const ServiceOptions& options,
                                              net::ConnectionOptions base) {
  if (options.heartbeat.interval.count() <= 0) return base;
  return net::Heartbeat(options.heartbeat, [](net::Connection&) {}).connection_options(base);
}

RpcService::RpcService(ServiceOptions options, RpcCounters& counters)
    : options_(std::move(options)), counters_(counters) {
  if (options_.heartbeat.interval.count() > 0)
    heartbeat_ = std::make_unique<net::Heartbeat>(options_.heartbeat,
                                                  [this](net::Connection& c) { send_ping(c); });
}

RpcService::~RpcService() = default;

void RpcService::on_open(net::Connection& conn) {
  conn.set_user_data(new Session(conn, options_.max_frame_length));
}

void RpcService::on_data(net::Connection& conn, std::string_view data) {
  auto& s = *static_cast<Session*>(conn.user_data());
  std::error_code ec;
  while (auto frame = s.decoder.next(data, ec)) handle_frame(s, *frame);
  // One write per read, however many frames it held: one syscall, not N.
  if (!out_.empty()) {
    conn.write(out_);
    out_.clear();
  }
  if (ec) {
    ++counters_.protocol_errors;
    if (ec == heartwheel::errc::frame_too_large) ++counters_.frames_too_large;
    conn.close(net::CloseReason::error, ec);
  }
}

void RpcService::handle_frame(Session& s, const rpc::FrameView& f) {
  switch (f.type) {
    case rpc::FrameType::request:
      ++counters_.requests;
      answer_request(s, f.id, f.payload);
      return;
    case rpc::FrameType::ping:
      ++counters_.pings_received;
      rpc::append_frame(out_, rpc::FrameType::pong, f.id, f.payload);
      return;
    case rpc::FrameType::pong:
      ++counters_.pongs_received;
      if (heartbeat_) heartbeat_->on_pong(s.conn);
      return;
    case rpc::FrameType::response:
    case rpc::FrameType::error:
      ++counters_.unexpected_frames;  // a client has nothing to answer; ignore
      return;
  }
}

void RpcService::answer_request(Session& s, std::uint64_t id, std::string_view payload) {
  if (options_.draining && options_.draining->load(std::memory_order_relaxed)) {
    ++counters_.errors_sent;
    rpc::append_frame(out_, rpc::FrameType::error, id, "server is draining");
    return;
  }
  if (options_.reply_delay.count() <= 0) {
    ++counters_.responses;
    rpc::append_frame(out_, rpc::FrameType::response, id, payload);
    return;
  }
  auto* r = new DelayedReply;
  r->service = this;
  r->session = &s;
  r->id = id;
  r->payload.assign(payload);
  s.link(*r);
  ++counters_.delayed;
  s.conn.timers().schedule(*r, options_.reply_delay);
}

void RpcService::on_reply_due(heartwheel::TimerEntry& entry) {
  std::unique_ptr<DelayedReply> r(static_cast<DelayedReply*>(&entry));
  Session& s = *r->session;
  s.unlink(*r);
  ++r->service->counters_.responses;
  s.conn.write(rpc::encode_frame(rpc::FrameType::response, r->id, r->payload));
  // The last owed response: a draining server may now close this connection.
  if (--s.delayed_count == 0) s.conn.end_request();
}

void RpcService::send_ping(net::Connection& conn) {
  auto& s = *static_cast<Session*>(conn.user_data());
  ++counters_.pings_sent;
  conn.write(rpc::encode_frame(rpc::FrameType::ping, ++s.ping_seq, rpc::ping_payload(hr_now())));
}

net::DeadlineAction RpcService::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  if (heartbeat_) return heartbeat_->on_deadline(conn, event);
  return net::DeadlineAction::close;
}

void RpcService::on_close(net::Connection& conn, net::CloseReason, std::error_code) {
  std::unique_ptr<Session> s(static_cast<Session*>(conn.user_data()));
  conn.set_user_data(nullptr);
  if (!s) return;
  while (DelayedReply* r = s->delayed) {
    s->unlink(*r);
    conn.timers().cancel(*r);
    ++counters_.dropped_replies;
    delete r;
  }
}

}  // namespace rpcserver
