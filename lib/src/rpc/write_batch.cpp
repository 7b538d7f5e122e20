// rpc::NetHandler's batched writes: frames are appended to the connection's
// batch and every pending batch leaves in one Connection::write before the
// loop polls again (see heartwheel/rpc/net_handler.h, "Batched writes").
//
// Why a prepare handle: the frames of one loop iteration come from reads
// (poll phase), wheel callbacks (check phase: pings, delayed answers, paced
// calls) and user code between them; the prepare phase is the one point
// after all of them and before the loop blocks. Started only while a batch
// is pending, so an idle loop runs nothing here; unref'd, so it never keeps
// the loop alive. It exists while the handler has connections: a handler
// may outlive its loop (testing::Host), so the handle is closed when the
// last connection closes.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/rpc/net_handler.h>

#include "session.h"

namespace heartwheel::rpc {

namespace {
// A batch buffer that grew beyond this for one large frame is freed after
// its write, so a long-lived connection does not keep the memory.
constexpr std::size_t kKeptBatchCapacity = 16 * 1024;
}  // namespace

void NetHandler::append(Session& s, FrameType type, std::uint64_t id, std::string_view payload) {
  if (s.closed || s.conn->closing()) return;  // would be dropped by the connection anyway
  if (s.out.empty()) {
    if (heartbeat_on()) s.heartbeat.note_write(s.conn->timers().now());
    mark_pending(s);
  }
  append_frame(s.out, type, id, payload);
  ++stats_.frames_sent;
  if (s.out.size() >= options_.flush_bytes) write_batch(s);
}

void NetHandler::write_batch(Session& s) {
  if (s.out.empty()) return;
  const std::error_code ec = s.conn->write(s.out);
  ++stats_.writes;
  if (s.out.capacity() > kKeptBatchCapacity) {
    std::string().swap(s.out);
  } else {
    s.out.clear();
  }
  if (ec == errc::limit_reached) {  // the peer stopped reading long ago
    ++stats_.write_refusals;
    s.conn->close(net::CloseReason::slow_consumer, ec);
  }
}

void NetHandler::flush(net::Connection& conn) {
  if (Session* s = session_of(conn)) write_batch(*s);
}

void NetHandler::mark_pending(Session& s) {
  if (s.pending) return;
  s.pending = true;
  s.prev_pending = nullptr;
  s.next_pending = pending_;
  if (pending_) pending_->prev_pending = &s;
  const bool was_idle = pending_ == nullptr;
  pending_ = &s;
  if (!was_idle) return;
  if (!prepare_) {
    prepare_ = new uv_prepare_t;
    uv_prepare_init(s.conn->loop(), prepare_);  // cannot fail (libuv: returns 0)
    prepare_->data = this;
    uv_unref(reinterpret_cast<uv_handle_t*>(prepare_));
  }
  uv_prepare_start(prepare_,
                   [](uv_prepare_t* h) { static_cast<NetHandler*>(h->data)->write_pending(); });
}

void NetHandler::unmark_pending(Session& s) noexcept {
  if (!s.pending) return;
  s.pending = false;
  if (s.prev_pending) {
    s.prev_pending->next_pending = s.next_pending;
  } else {
    pending_ = s.next_pending;
  }
  if (s.next_pending) s.next_pending->prev_pending = s.prev_pending;
  s.prev_pending = s.next_pending = nullptr;
}

void NetHandler::write_pending() {
  // write_batch() never closes synchronously (closes are deferred), so every
  // state stays valid; each is unlinked before its write.
  while (Session* s = pending_) {
    unmark_pending(*s);
    write_batch(*s);
  }
  if (prepare_) uv_prepare_stop(prepare_);
}

void NetHandler::close_prepare() noexcept {
  if (!prepare_) return;
  prepare_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(prepare_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_prepare_t*>(h); });
  prepare_ = nullptr;
}

}  // namespace heartwheel::rpc
