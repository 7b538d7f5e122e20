// See heartwheel/rpc/net_handler.h: a connection's life (open, frames,
// drain/EOF, close) and the dispatch of frames to the serving and calling
// sides. The heartbeat is in heartbeat.cpp, the batched writes in
// write_batch.cpp.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/rpc/net_handler.h>

#include <stdexcept>
#include <string>

#include "session.h"

namespace heartwheel::rpc {

namespace {
constexpr std::string_view kDraining = "server is draining";
}

void NetHandlerOptions::validate() const {
  if (heartbeat.interval.count() < 0)
    throw std::invalid_argument("rpc handler: heartbeat interval must not be negative (0 = off)");
  if (heartbeat.interval.count() > 0) heartbeat.validate();
  if (max_frame_length < kMinFrameLength)
    throw std::invalid_argument("rpc handler: max_frame_length must be at least " +
                                std::to_string(kMinFrameLength) + " (type + id)");
  if (flush_bytes == 0) throw std::invalid_argument("rpc handler: flush_bytes must be positive");
}

NetHandler::NetHandler(NetHandlerOptions options) : options_(std::move(options)) {
  options_.validate();
}

NetHandler::~NetHandler() {
  // First the calls: disarmed without completions (nothing is reported from
  // a destructor). Then the connections a destroyed Server abandoned
  // (closed without on_close): their owed answers are abandoned.
  calls_.reset();
  while (head_) {
    Session* s = head_;
    tear_down(*s);
    delete s;
  }
  close_prepare();
  if (publish_) publish_(stats_);
}

NetHandler::Session* NetHandler::session_of(const net::Connection& conn) const noexcept {
  auto* s = static_cast<Session*>(conn.user_data());
  return s && s->owner == this ? s : nullptr;
}

// ---- a connection's life ----------------------------------------------------

void NetHandler::on_open(net::Connection& conn) {
  auto* s = new Session(*this, conn, options_.max_frame_length);
  conn.set_user_data(s);
  s->next = head_;
  if (head_) head_->prev = s;
  head_ = s;
  ++count_;
  if (heartbeat_on()) start_heartbeat(*s);
  if (options_.on_open) options_.on_open(conn);
}

void NetHandler::on_data(net::Connection& conn, std::string_view data) {
  Session* s = session_of(conn);
  if (!s) return;
  if (heartbeat_on()) note_read(*s);
  std::error_code ec;
  while (auto frame = s->decoder.next(data, ec)) {
    dispatch(*s, *frame);
    if (conn.closing()) return;  // a callback closed it: the rest is moot
  }
  if (ec) {
    ++stats_.protocol_errors;
    if (ec == errc::frame_too_large) ++stats_.frames_too_large;
    write_batch(*s);  // the answers to the frames before the bad one
    conn.close(net::CloseReason::protocol_error, ec);
    return;
  }
  s->decoder.shrink();
}

void NetHandler::on_eof(net::Connection& conn) {
  Session* s = session_of(conn);
  if (!s) {
    Handler::on_eof(conn);
    return;
  }
  s->eof = true;
  // The peer sends nothing more: replies to our calls cannot come.
  if (calls_ && s->size() > 0) calls_->fail_group(*s, make_error_code(errc::closed));
  settle(*s);
}

void NetHandler::on_drain(net::Connection& conn) {
  Session* s = session_of(conn);
  if (!s) {
    Handler::on_drain(conn);
    return;
  }
  s->draining = true;
  settle(*s);
}

void NetHandler::drain_all() {
  // settle() may close connections, but closes are deferred (on_close runs
  // on a later loop iteration), so the list stays intact meanwhile.
  for (Session* s = head_; s; s = s->next) on_drain(*s->conn);
}

void NetHandler::on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) {
  Session* s = session_of(conn);
  if (!s) return;
  if (reason == net::CloseReason::pong_timeout) ++stats_.pong_timeouts;
  tear_down(*s);
  if (options_.on_close) options_.on_close(conn, reason, error);
  conn.set_user_data(nullptr);
  delete s;
  if (count_ == 0) close_prepare();  // nothing left to batch for on this loop
  if (publish_) publish_(stats_);
}

// Fails the connection's calls, abandons the answers it is owed and unlinks
// its state; the caller deletes it.
void NetHandler::tear_down(Session& s) {
  s.closed = true;
  unmark_pending(s);
  s.out.clear();
  if (calls_ && s.size() > 0) calls_->fail_group(s, make_error_code(errc::closed));
  while (Reply* r = s.owed) {
    r->unlink();
    ++stats_.dropped_replies;
    // Moved out first: the callback may destroy `r` and whatever holds it.
    auto abandoned = std::move(r->on_abandon_);
    r->on_abandon_ = nullptr;
    if (abandoned) abandoned();
  }
  if (s.prev) {
    s.prev->next = s.next;
  } else {
    head_ = s.next;
  }
  if (s.next) s.next->prev = s.prev;
  --count_;
}

// In flight or not: keeps Connection::in_request() true while answers are
// owed or calls are out, and closes a draining / half-closed connection once
// nothing is left.
void NetHandler::settle(Session& s) {
  if (s.closed || s.conn->closing()) return;
  net::Connection& conn = *s.conn;
  if (s.in_flight() > 0) {
    if (!s.in_request) conn.begin_request(Duration{0});  // no deadline: drain waits
    s.in_request = true;
    return;
  }
  if (s.draining || s.eof) write_batch(s);  // before end_request: a draining Server closes then
  if (s.in_request) {
    s.in_request = false;
    conn.end_request();
  }
  if (s.draining || s.eof)
    conn.close_after_flush(s.draining ? net::CloseReason::drain : net::CloseReason::peer_closed);
}

// ---- frames -----------------------------------------------------------------

void NetHandler::dispatch(Session& s, const FrameView& f) {
  switch (f.type) {
    case FrameType::request:
      on_request_frame(s, f);
      return;
    case FrameType::response:
    case FrameType::error:
      on_reply_frame(s, f);
      return;
    case FrameType::ping:
      ++stats_.pings_received;
      append(s, FrameType::pong, f.id, f.payload);
      return;
    case FrameType::pong:
      on_pong_frame(s, f);
      return;
  }
}

void NetHandler::on_request_frame(Session& s, const FrameView& f) {
  if (!options_.on_request) {
    ++stats_.unexpected_frames;
    return;
  }
  ++stats_.requests;
  if (s.draining) {
    ++stats_.refused_draining;
    ++stats_.errors_sent;
    append(s, FrameType::error, f.id, kDraining);
    return;
  }
  options_.on_request(Request{*s.conn, f.id, f.payload}, Reply(s, f.id));
  // Still owed (answered later): in flight. An answer given during the call
  // settled already, so the common case touches the connection not at all.
  settle(s);
}

void NetHandler::answer(Session& s, Reply& reply, bool ok, std::string_view payload) {
  reply.unlink();
  ++(ok ? stats_.responses : stats_.errors_sent);
  append(s, ok ? FrameType::response : FrameType::error, reply.id(), payload);
  settle(s);
}

void NetHandler::on_reply_frame(Session& s, const FrameView& f) {
  ++stats_.replies;
  if (!calls_) {
    ++stats_.unexpected_frames;
    return;
  }
  // The completion (and settle) run from on_call_done.
  calls_->complete(f.id, f.payload, f.type == FrameType::error, &s);
}

// ---- calls ------------------------------------------------------------------

std::uint64_t NetHandler::call(net::Connection& conn, std::string_view payload, Duration timeout,
                               void* context, std::error_code& error) {
  error.clear();
  Session* s = session_of(conn);
  if (!s || s->closed || s->eof || conn.closing()) {
    error = errc::closed;
    return 0;
  }
  if (s->draining) {
    error = errc::shutting_down;
    return 0;
  }
  if (!options_.on_call_done) {
    error = errc::invalid_argument;
    return 0;
  }
  if (!calls_)
    calls_ = std::make_unique<CallTable>(
        conn.timers(), static_cast<CallListener&>(*this),
        CallTableOptions{.max_in_flight = options_.max_calls_in_flight, .clock = options_.clock});
  const std::uint64_t id = calls_->start(timeout, context, error, s);
  if (error) return 0;
  ++stats_.calls_sent;
  append(*s, FrameType::request, id, payload);
  settle(*s);
  return id;
}

void NetHandler::on_call_done(const CallCompletion& done) {
  if (options_.on_call_done) options_.on_call_done(done);
  // Our calls are always in a group: their connection's state.
  if (done.group) settle(*static_cast<Session*>(done.group));
}

CallTableStats NetHandler::call_stats() const noexcept {
  return calls_ ? calls_->stats() : CallTableStats{};
}

std::size_t NetHandler::calls_in_flight() const noexcept {
  return calls_ ? calls_->in_flight() : 0;
}

std::size_t NetHandler::in_flight(const net::Connection& conn) const noexcept {
  const Session* s = session_of(conn);
  return s ? s->in_flight() : 0;
}

}  // namespace heartwheel::rpc
