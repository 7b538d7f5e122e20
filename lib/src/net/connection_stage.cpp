// The transport stage of a Connection (see byte_stage.h and connection.h,
// "Byte stage"): Gate stands in for the application's handler until the
// transport is ready; the read path hands every byte to the transport, the
// write path goes through it (connection_write.cpp), and the closing paths
// ask it for its last bytes.
#include <heartwheel/common/error.h>
#include <heartwheel/net/byte_stage.h>
#include <heartwheel/net/connection.h>

#include "connection_extras.h"
#include "connection_guarded.h"
#include "write_queue.h"

namespace heartwheel::net {

ByteStage* Connection::byte_stage() const noexcept {
  return transport_ ? extra_->transport.get() : nullptr;
}

bool Connection::in_byte_stage() const noexcept {
  return transport_ && extra_->app_handler != nullptr;
}

void Connection::begin_transport(ByteStageFactory& factory, std::string_view rest) noexcept {
  Extras* x = nullptr;
  try {
    x = &extras();
  } catch (...) {
  }
  if (x) x->transport = factory.make(*this);
  if (!x || !x->transport) {  // out of memory: the application has not seen it
    handler_ = &Gate::instance();
    close(CloseReason::error, uv_error(UV_ENOMEM));
    return;
  }
  x->app_handler = handler_;
  handler_ = &Gate::instance();
  transport_ = true;
  guarded([&] { x->transport->start(*this); });
  if (closing_ || rest.empty()) return;
  guarded([&] { x->transport->on_bytes(*this, rest); });
}

void Connection::transport_closing(bool queue) noexcept {
  if (in_byte_stage()) return;  // no session to end politely yet
  guarded([&] { extra_->transport->closing(*this, queue); });
}

std::error_code ByteStageIo::write(Connection& conn, std::string_view bytes) {
  return conn.write_socket(&bytes, 1);
}

bool ByteStageIo::write_now(Connection& conn, std::string_view bytes) noexcept {
  if (conn.closing_ || conn.wq_ || bytes.empty()) return bytes.empty();
  uv_buf_t buf = uv_buf_init(const_cast<char*>(bytes.data()), static_cast<unsigned>(bytes.size()));
  const int rc = uv_try_write(reinterpret_cast<uv_stream_t*>(&conn.tcp_), &buf, 1);
  if (rc <= 0) return false;
  conn.count_written(static_cast<std::size_t>(rc));
  conn.stats().bytes_written += static_cast<std::size_t>(rc);
  return static_cast<std::size_t>(rc) == bytes.size();
}

bool ByteStageIo::ready(Connection& conn, bool resumed) noexcept {
  Connection::Extras& x = *conn.extra_;
  if (conn.closing_ || !x.app_handler) return false;
  NetStats& stats = conn.stats();
  ++stats.handshakes_completed;
  if (resumed) ++stats.handshakes_resumed;
  conn.handler_ = x.app_handler;
  x.app_handler = nullptr;
  return conn.guarded([&] { conn.handler_->on_open(conn); }) && !conn.closing_;
}

void ByteStageIo::deliver(Connection& conn, std::string_view bytes) noexcept {
  if (conn.closing_ || bytes.empty()) return;
  conn.guarded([&] { conn.handler_->on_data(conn, bytes); });
}

void ByteStageIo::end_of_stream(Connection& conn) noexcept {
  if (conn.closing_ || conn.eof_) return;
  conn.handle_eof();
}

}  // namespace heartwheel::net
