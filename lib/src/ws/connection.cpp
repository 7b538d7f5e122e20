// ws::Connection: the session's Transport and Handler on a net::Connection,
// and the application's sends (messages, shared frames with the slow-consumer
// rule, the close handshake). The timing is the NetHandler's
// (net_handler.cpp). See heartwheel/ws/connection.h.
#include <heartwheel/common/error.h>
#include <heartwheel/common/prefetch.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/ws/connection.h>
#include <heartwheel/ws/net_handler.h>

#include <cstddef>
#include <new>

namespace heartwheel::ws {

namespace {

// Where user_storage() starts: right after the connection, at its
// kUserStorageAlign (8, not max_align_t's 16: 8 bytes of padding there
// would cost a 16-byte malloc step for heartwheel-chat's client).
constexpr std::size_t kStorageAt = (sizeof(Connection) + Connection::kUserStorageAlign - 1) /
                                   Connection::kUserStorageAlign * Connection::kUserStorageAlign;
static_assert(alignof(Connection) <= Connection::kUserStorageAlign);

}  // namespace

Connection::Connection(NetHandler& owner, net::Connection& conn)
    : conn_(&conn), session_(*this, owner.options_.session) {}

Connection* Connection::make(NetHandler& owner, net::Connection& conn, std::size_t storage) {
  void* memory = ::operator new(storage == 0 ? sizeof(Connection) : kStorageAt + storage);
  try {
    return new (memory) Connection(owner, conn);
  } catch (...) {
    ::operator delete(memory);
    throw;
  }
}

void Connection::destroy(Connection& c) noexcept {
  c.~Connection();
  ::operator delete(&c);
}

NetHandler& Connection::owner() const noexcept {
  return static_cast<NetHandler&>(conn_->handler());
}

void* Connection::user_storage() noexcept {
  return owner().options_.user_storage_bytes == 0 ? nullptr
                                                  : reinterpret_cast<char*>(this) + kStorageAt;
}

Connection& Connection::from_user_storage(void* storage) noexcept {
  return *reinterpret_cast<Connection*>(static_cast<char*>(storage) - kStorageAt);
}

std::uint64_t Connection::id() const noexcept { return conn_->id(); }

bool Connection::is_open() const noexcept {
  return session_.state() == Session::State::open && !conn_->closing();
}

bool Connection::fits(std::size_t bytes) const noexcept {
  const std::size_t limit = owner().options_.max_queued_bytes;
  const std::size_t queued = conn_->queued_bytes();
  // An empty queue always takes the frame: the limit is about falling behind,
  // not about one large message.
  return limit == 0 || queued == 0 || queued + bytes <= limit;
}

std::error_code Connection::send_message(MessageType type, std::string_view payload) {
  if (conn_->closing()) return make_error_code(errc::closed);
  if (session_.close_sent() || session_.state() == Session::State::closed)
    return make_error_code(errc::closed);
  // The same budget as deliver(): what a peer that does not read can make
  // the server hold is bounded by max_queued_bytes, replies and echoes
  // included (a message cannot be skipped, so the policy is always close).
  if (!fits(payload.size() + kMaxFrameHeaderSize)) {
    close_slow_consumer();
    return make_error_code(errc::limit_reached);
  }
  if (const std::error_code ec = session_.send(type, payload)) return ec;
  // The write was refused by the connection's cap: closed as a slow consumer.
  if (conn_->closing()) return make_error_code(errc::limit_reached);
  ++owner().stats_.messages_sent;
  return {};
}

std::error_code Connection::send_text(std::string_view payload) {
  return send_message(MessageType::text, payload);
}

std::error_code Connection::send_binary(std::string_view payload) {
  return send_message(MessageType::binary, payload);
}

Delivery Connection::deliver(const SharedFrame& frame) {
  Stats& stats = owner().stats_;
  if (!frame || conn_->closing() || session_.close_sent() ||
      session_.state() == Session::State::closed) {
    ++stats.deliveries_dropped;
    return Delivery::dropped;
  }
  if (!fits(frame->size())) {
    if (owner().options_.slow_consumer == SlowConsumerPolicy::skip) {
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

void Connection::prefetch() const noexcept {
  prefetch_object(*this);
  conn_->prefetch();
}

std::error_code Connection::close(std::uint16_t code, std::string_view reason) {
  if (const std::error_code ec = session_.close(code, reason)) return ec;
  owner().arm_close_timeout(*this);
  return {};
}

void Connection::close_slow_consumer() {
  if (conn_->closing()) return;
  ++owner().stats_.slow_consumer_closes;
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

bool Connection::backlogged() {
  if (conn_->queued_bytes() == 0) return false;
  // The pong waits for the queue to empty (NetHandler::on_writable sends
  // it); a later ping while it waits replaces it.
  if (session_.pong_owed())
    ++owner().stats_.pongs_folded;
  else
    conn_->notify_when_drained();
  return true;
}

DeflatePool* Connection::deflate_pool() noexcept { return owner().deflate_pool_.get(); }

bool Connection::yield_turn() {
  if (!conn_->call_next_turn()) return false;  // no turns here: go on at once
  conn_->pause_reading();                      // the kernel holds the rest meanwhile
  return true;
}

void Connection::close() {
  // The close handshake is complete (or failed): no more pings, pong or close
  // deadlines; the write-stall rule bounds the flush.
  owner().finish_timers(*conn_);
  const net::CloseReason reason = draining_           ? net::CloseReason::drain
                                  : session_.failed() ? net::CloseReason::protocol_error
                                                      : net::CloseReason::protocol_close;
  conn_->close_after_flush(reason);
}

// ---- ws::Handler --------------------------------------------------------------

void Connection::on_message(Session&, MessageType type, std::string& payload) {
  ++owner().stats_.messages_received;
  owner().app_.on_message(*this, type, payload);
}

void Connection::on_discarded(Session&, MessageType, std::size_t) {
  ++owner().stats_.messages_after_close;
}

void Connection::on_ping(Session&, std::string_view) { ++owner().stats_.pings_received; }

void Connection::on_pong(Session&, std::string_view) { ++owner().stats_.pongs_received; }

void Connection::on_protocol_error(Session&, std::uint16_t, std::string_view) {
  ++owner().stats_.protocol_errors;
}

}  // namespace heartwheel::ws
