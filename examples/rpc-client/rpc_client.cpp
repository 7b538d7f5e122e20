// See rpc_client.h.
#include "rpc_client.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <uv.h>

#include <heartwheel/error.h>

namespace rpcclient {

namespace {

// Round trips are measured on the monotonic ns clock, not the loop's cached ms.
TimePoint hr_now() noexcept { return TimePoint(std::chrono::nanoseconds(uv_hrtime())); }

net::ConnectorOptions connector_options(const ClientOptions& o, const net::Heartbeat* hb) {
  net::ConnectorOptions c = o.connector;
  if (hb) c.connection = hb->connection_options(c.connection);
  return c;
}

}  // namespace

// Two wheel entries: the pacing tick and the end of the run.
struct RpcClient::Pacer {
  struct Hook final : heartwheel::TimerEntry {
    Hook(RpcClient* o, void (RpcClient::*f)()) : TimerEntry(&fire), owner(o), fn(f) {}
    static void fire(TimerEntry& e) {
      auto& h = static_cast<Hook&>(e);
      (h.owner->*h.fn)();
    }
    RpcClient* owner;
    void (RpcClient::*fn)();
  };
  explicit Pacer(RpcClient* o) : tick(o, &RpcClient::pace), end(o, &RpcClient::finish) {}
  Hook tick;
  Hook end;
};

void ClientOptions::validate() const {
  if (rate < 0) throw std::invalid_argument("--rate must not be negative");
  if (call_timeout.count() <= 0) throw std::invalid_argument("--call-timeout must be > 0");
  if (duration.count() <= 0 && calls == 0)
    throw std::invalid_argument("give --duration or --calls (or both): the run needs an end");
  if (max_in_flight == 0) throw std::invalid_argument("--max-in-flight must be at least 1");
}

RpcClient::RpcClient(heartwheel::LoopWheel& wheel, ClientOptions options)
    : wheel_(wheel),
      options_(std::move(options)),
      heartbeat_(options_.heartbeat.interval.count() > 0
                     ? std::make_unique<net::Heartbeat>(options_.heartbeat,
                                                        [this](net::Connection& c) { send_ping(c); })
                     : nullptr),
      connector_(wheel, *this, connector_options(options_, heartbeat_.get())),
      calls_(wheel, *this, {.max_in_flight = options_.max_in_flight, .clock = &hr_now}),
      pacer_(std::make_unique<Pacer>(this)),
      payload_(options_.payload_size, 'x') {
  options_.validate();
  for (std::size_t i = 0; i < payload_.size(); ++i) payload_[i] = static_cast<char>('a' + i % 26);
}

RpcClient::~RpcClient() {
  wheel_.cancel(pacer_->tick);
  wheel_.cancel(pacer_->end);
}

void RpcClient::start(std::function<void()> on_finished) {
  on_finished_ = std::move(on_finished);
  started_at_ = hr_now();
  if (options_.duration.count() > 0) wheel_.schedule(pacer_->end, options_.duration);
  connector_.start();
}

Duration RpcClient::elapsed() const noexcept {
  return (finished_ ? stopped_at_ : hr_now()) - started_at_;
}

bool RpcClient::done_issuing() const noexcept {
  return finishing_ || (options_.calls > 0 && issued_ >= options_.calls);
}

bool RpcClient::issue_one() {
  if (!conn_ || conn_->closing() || !decoder_) return false;
  std::error_code ec;
  const std::uint64_t id = calls_.start(options_.call_timeout, nullptr, ec);
  if (ec) return false;
  ++issued_;
  rpc::append_frame(out_, rpc::FrameType::request, id, payload_);
  return true;
}

void RpcClient::pace() {
  if (!done_issuing() && paced_from_) {
    if (options_.rate > 0) {
      const double secs = std::chrono::duration<double>(hr_now() - *paced_from_).count();
      const auto due = static_cast<std::uint64_t>(std::floor(secs * options_.rate));
      while (due_taken_ < due && !done_issuing()) {
        ++due_taken_;
        if (!issue_one()) ++counters_.calls_unsent;
      }
      // Next slot, but no more often than the wheel's tick: batches at high rates.
      const auto next = *paced_from_ + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(
                                          static_cast<double>(due_taken_ + 1) / options_.rate));
      const Duration wait = std::max<Duration>(next - hr_now(), wheel_.wheel().tick());
      if (!done_issuing()) wheel_.schedule(pacer_->tick, wait);
    } else if (options_.calls > 0) {  // back to back, a window of max_in_flight
      while (!done_issuing() && calls_.in_flight() < options_.max_in_flight && issue_one()) {
      }
    }
  }
  if (!out_.empty() && conn_) conn_->write(out_);
  out_.clear();
  maybe_finished();
}

void RpcClient::finish() {
  if (finishing_) return;
  finishing_ = true;
  wheel_.cancel(pacer_->tick);
  maybe_finished();
}

void RpcClient::maybe_finished() {
  if (finished_ || !done_issuing() || calls_.in_flight() > 0) return;
  finished_ = true;
  stopped_at_ = hr_now();
  wheel_.cancel(pacer_->tick);
  wheel_.cancel(pacer_->end);
  const bool closing = conn_ != nullptr;
  connector_.stop();
  if (!closing) notify_finished();  // else when on_close comes
}

void RpcClient::notify_finished() {
  if (notified_ || !on_finished_) return;
  notified_ = true;
  on_finished_();
}

void RpcClient::on_open(net::Connection& conn) {
  conn_ = &conn;
  decoder_ = std::make_unique<rpc::FrameDecoder>(options_.max_frame_length);
  // The schedule starts with the first connection, so the connect itself does
  // not count as calls missed; after that, calls due while disconnected are.
  if (!paced_from_) paced_from_ = hr_now();
  pace();
}

void RpcClient::on_data(net::Connection& conn, std::string_view data) {
  if (!decoder_) return;
  std::error_code ec;
  while (auto frame = decoder_->next(data, ec)) handle_frame(conn, *frame);
  if (!out_.empty() && !conn.closing()) conn.write(out_);
  out_.clear();
  if (ec) {
    ++counters_.protocol_errors;
    conn.close(net::CloseReason::error, ec);
  }
}

void RpcClient::handle_frame(net::Connection& conn, const rpc::FrameView& f) {
  switch (f.type) {
    case rpc::FrameType::response:
    case rpc::FrameType::error:
      calls_.complete(f.id, f.payload, f.type == rpc::FrameType::error);
      return;
    case rpc::FrameType::ping:
      ++counters_.pings_received;
      rpc::append_frame(out_, rpc::FrameType::pong, f.id, f.payload);
      return;
    case rpc::FrameType::pong:
      ++counters_.pongs_received;
      if (heartbeat_) heartbeat_->on_pong(conn);
      if (auto sent = rpc::ping_sent_at(f.payload))
        counters_.heartbeat_rtt_ns.add((hr_now() - *sent).count());
      return;
    case rpc::FrameType::request:
      ++counters_.unexpected_frames;
      return;
  }
}

void RpcClient::send_ping(net::Connection& conn) {
  ++counters_.heartbeats_sent;
  conn.write(rpc::encode_frame(rpc::FrameType::ping, ++ping_seq_, rpc::ping_payload(hr_now())));
}

net::DeadlineAction RpcClient::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  return heartbeat_ ? heartbeat_->on_deadline(conn, event) : net::DeadlineAction::close;
}

void RpcClient::on_close(net::Connection&, net::CloseReason, std::error_code) {
  conn_ = nullptr;
  decoder_.reset();
  // Replies to these can no longer come: the server answers on the connection
  // the request came in on.
  calls_.fail_all(heartwheel::make_error_code(heartwheel::errc::closed));
  if (finished_) notify_finished();
}

void RpcClient::on_call_done(const rpc::CallCompletion& done) {
  if (done.status == rpc::CallStatus::ok) {
    counters_.rtt_ns.add(done.elapsed.count());
    if (done.payload != payload_) ++counters_.payload_mismatches;
  }
  if (options_.rate <= 0 && conn_) {
    pace();
  } else {
    maybe_finished();
  }
}

}  // namespace rpcclient
