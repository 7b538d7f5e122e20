// See uring_fanout.h. Built with liburing when CMake / Meson found it
// (HEARTWHEEL_CHAT_URING); otherwise the constructor refuses.
#include "uring_fanout.h"

#include <heartwheel/net/connection.h>
#include <uv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#ifdef HEARTWHEEL_CHAT_URING
#include <liburing.h>
#include <sys/socket.h>
#endif

namespace chat {

namespace {
thread_local UringFanout* current_batch = nullptr;
constexpr unsigned kRingEntries = 256;  // sends per io_uring_enter
}  // namespace

UringFanout* UringFanout::current() noexcept { return current_batch; }

bool UringFanout::take(heartwheel::ws::Connection& ws, const heartwheel::pubsub::Frame& frame) {
  if (!frame || frame->empty() || !ws.is_open() || ws.net().queued_bytes() != 0) return false;
  // What this peer gets: the frame, or the loop's compressed form of it
  // (null: it compresses with its own context, deliver() does that).
  heartwheel::pubsub::Frame wire = ws.wire_frame(frame);
  if (!wire) return false;
  pending_.push_back({&ws, std::move(wire)});
  return true;
}

void UringFanout::finish(const Entry& e, int result) noexcept {
  const std::string_view bytes(*e.frame);
  // Sent by the ring, not net::Connection::write: counted here (bytes,
  // message, write activity).
  if (result > 0) e.ws->note_delivered(static_cast<std::size_t>(result));
  if (result == static_cast<int>(bytes.size())) return;
  if (result > 0) {  // short: the rest through the queue (copied), in order
    (void)e.ws->net().write(bytes.substr(static_cast<std::size_t>(result)));
    return;
  }
  // Refused (-EAGAIN: no room) or failed: the normal path queues it, or
  // meets the same error and closes the connection as it always does.
  (void)e.ws->deliver(e.frame);
}

#ifdef HEARTWHEEL_CHAT_URING

struct UringFanout::Ring {
  io_uring ring{};
};

bool UringFanout::built() noexcept { return true; }

UringFanout::UringFanout() : ring_(std::make_unique<Ring>()) {
  int rc = -EINVAL;
  for (const unsigned flags : {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, 0u}) {
    io_uring_params params{};
    params.flags = flags;
    rc = io_uring_queue_init_params(kRingEntries, &ring_->ring, &params);
    if (rc == 0) break;
  }
  if (rc != 0)
    throw std::runtime_error(std::string("--uring-fanout: io_uring_queue_init: ") +
                             std::strerror(-rc));
  current_batch = this;
}

UringFanout::~UringFanout() {
  flush();
  if (current_batch == this) current_batch = nullptr;
  io_uring_queue_exit(&ring_->ring);
}

void UringFanout::flush() noexcept {
  io_uring* ring = &ring_->ring;
  std::size_t at = 0;
  while (at < pending_.size()) {
    const std::size_t end = std::min(pending_.size(), at + kRingEntries);
    unsigned queued = 0;
    for (std::size_t i = at; i < end; ++i) {
      const Entry& e = pending_[i];
      int fd = -1;
      // Closed since take() (another subscriber's callback cannot close it,
      // but be safe): the normal path reports it.
      if (!e.ws->is_open() || e.ws->net().queued_bytes() != 0 ||
          uv_fileno(reinterpret_cast<const uv_handle_t*>(e.ws->net().handle()), &fd) != 0) {
        finish(e, -EBADF);
        continue;
      }
      io_uring_sqe* sqe = io_uring_get_sqe(ring);  // never null: at most kRingEntries
      io_uring_prep_send(sqe, fd, e.frame->data(), e.frame->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      sqe->user_data = i;
      ++queued;
    }
    if (queued > 0) {
      // The sends complete inline (MSG_DONTWAIT), so their completions are
      // there when the call returns; -EINTR can only cut the wait short.
      int rc = 0;
      do rc = io_uring_submit_and_wait(ring, queued);
      while (rc == -EINTR);
      for (unsigned seen = 0; rc >= 0 && seen < queued; ++seen) {
        io_uring_cqe* cqe = nullptr;
        do rc = io_uring_wait_cqe(ring, &cqe);
        while (rc == -EINTR);
        if (rc < 0) break;
        const Entry& e = pending_[cqe->user_data];
        const int result = cqe->res;
        io_uring_cqe_seen(ring, cqe);
        finish(e, result);
      }
      if (rc < 0) std::abort();  // a lost completion would lose frames: never go on
    }
    at = end;
  }
  pending_.clear();
}

#else

struct UringFanout::Ring {};

bool UringFanout::built() noexcept { return false; }

UringFanout::UringFanout() {
  throw std::runtime_error("--uring-fanout: this heartwheel-chat was built without liburing");
}

UringFanout::~UringFanout() = default;

void UringFanout::flush() noexcept { pending_.clear(); }

#endif

}  // namespace chat
