// ws::Connection: the session's Transport and Handler on a net::Connection,
// and the application's sends (messages, shared frames with the slow-consumer
// rule, the close handshake). The timing is the NetHandler's
// (net_handler.cpp). See heartwheel/ws/connection.h.
#include <heartwheel/common/error.h>
#include <heartwheel/common/prefetch.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/ws/connection.h>
#include <heartwheel/ws/net_handler.h>

namespace heartwheel::ws {

Connection::Connection(NetHandler& owner, net::Connection& conn)
    : owner_(&owner), conn_(&conn), session_(*this, *this, owner.options_.session) {}

std::uint64_t Connection::id() const noexcept { return conn_->id(); }

bool Connection::is_open() const noexcept {
  return session_.state() == Session::State::open && !conn_->closing();
}

namespace {
std::error_code send_message(Session& session, const net::Connection& conn, MessageType type,
                             std::string_view payload, Stats& stats) {
  if (conn.closing()) return make_error_code(errc::closed);
  if (const std::error_code ec = session.send(type, payload)) return ec;
  // The write was refused by the connection's cap: closed as a slow consumer.
  if (conn.closing()) return make_error_code(errc::limit_reached);
  ++stats.messages_sent;
  return {};
}
}  // namespace

std::error_code Connection::send_text(std::string_view payload) {
  return send_message(session_, *conn_, MessageType::text, payload, owner_->stats_);
}

std::error_code Connection::send_binary(std::string_view payload) {
  return send_message(session_, *conn_, MessageType::binary, payload, owner_->stats_);
}

Delivery Connection::deliver(const SharedFrame& frame) {
  Stats& stats = owner_->stats_;
  if (!frame || conn_->closing() || session_.close_sent() ||
      session_.state() == Session::State::closed) {
    ++stats.deliveries_dropped;
    return Delivery::dropped;
  }
  const NetHandlerOptions& o = owner_->options_;
  const std::size_t queued = conn_->queued_bytes();
  // An empty queue always takes the frame: the limit is about falling behind,
  // not about one large publication.
  if (o.max_queued_bytes != 0 && queued > 0 && queued + frame->size() > o.max_queued_bytes) {
    if (o.slow_consumer == SlowConsumerPolicy::skip) {
      ++stats.slow_consumer_skips;
      return Delivery::skipped;
    }
    close_slow_consumer();
    return Delivery::closed;
  }
  (void)session_.send_shared(frame);  // -> send_shared below: by reference
  if (conn_->closing()) {
    if (conn_->close_reason() == net::CloseReason::slow_consumer) return Delivery::closed;
    ++stats.deliveries_dropped;  // a socket error closed it
    return Delivery::dropped;
  }
  ++stats.messages_sent;
  ++stats.shared_sent;
  return Delivery::sent;
}

SharedFrame Connection::wire_frame(const SharedFrame& frame) {
  return frame ? session_.wire_frame(frame) : frame;
}

void Connection::prefetch() const noexcept {
  prefetch_object(*this);
  conn_->prefetch();
}

void Connection::note_delivered(std::size_t bytes) noexcept {
  if (bytes == 0 || conn_->closing()) return;
  conn_->note_written(bytes);
  ++owner_->stats_.messages_sent;
  ++owner_->stats_.shared_sent;
}

std::error_code Connection::close(std::uint16_t code, std::string_view reason) {
  if (const std::error_code ec = session_.close(code, reason)) return ec;
  owner_->arm_close_timeout(*this);
  return {};
}

void Connection::close_slow_consumer() {
  if (conn_->closing()) return;
  ++owner_->stats_.slow_consumer_closes;
  // At once, queued bytes dropped (and counted by the connection): a peer
  // that does not read would not read a close frame either.
  conn_->close(net::CloseReason::slow_consumer);
}

// ---- ws::Transport ----------------------------------------------------------

void Connection::send(std::string_view head, std::string_view payload) {
  if (conn_->write({head, payload}) == errc::limit_reached) close_slow_consumer();
}

void Connection::send_shared(const SharedFrame& frame) {
  if (conn_->write(frame) == errc::limit_reached) close_slow_consumer();
}

DeflatePool* Connection::deflate_pool() noexcept { return owner_->deflate_pool_.get(); }

bool Connection::yield_turn() {
  if (!conn_->call_next_turn()) return false;  // no turns here: go on at once
  conn_->pause_reading();                      // the kernel holds the rest meanwhile
  return true;
}

void Connection::close() {
  // The close handshake is complete (or failed): no more pings, pong or close
  // deadlines; the write-stall rule bounds the flush.
  owner_->finish_timers(*conn_);
  const net::CloseReason reason = draining_           ? net::CloseReason::drain
                                  : session_.failed() ? net::CloseReason::protocol_error
                                                      : net::CloseReason::protocol_close;
  conn_->close_after_flush(reason);
}

// ---- ws::Handler --------------------------------------------------------------

void Connection::on_message(Session&, MessageType type, std::string& payload) {
  ++owner_->stats_.messages_received;
  owner_->app_.on_message(*this, type, payload);
}

void Connection::on_ping(Session&, std::string_view) { ++owner_->stats_.pings_received; }

void Connection::on_pong(Session&, std::string_view) { ++owner_->stats_.pongs_received; }

void Connection::on_protocol_error(Session&, std::uint16_t, std::string_view) {
  ++owner_->stats_.protocol_errors;
}

}  // namespace heartwheel::ws
