// See send_batch.h. The ring exists when the library was built with liburing
// (HEARTWHEEL_NET_URING: cmake/Dependencies.cmake, meson.build) and the
// kernel lets us set one up.
#include "send_batch.h"

#include <heartwheel/common/log.h>
#include <heartwheel/common/send_batch_scope.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#ifdef HEARTWHEEL_NET_URING
#include <liburing.h>
#include <sys/socket.h>
#endif

namespace heartwheel::net {

namespace {

thread_local SendBatch* thread_batch = nullptr;

// Once per process: the first failure is said, later threads do not retry.
std::atomic<bool> batching_unavailable{false};

void say_unavailable(const char* why) noexcept {
  if (!batching_unavailable.exchange(true))
    log::warning("io_uring unavailable: shared writes to many connections go out one write() "
                 "per socket",
                 {log::field("why", why)});
}

}  // namespace

#ifdef HEARTWHEEL_NET_URING

struct SendBatch::Ring {
  io_uring ring{};
  ~Ring() { io_uring_queue_exit(&ring); }
};

SendBatch* SendBatch::of_thread() noexcept {
  thread_local std::unique_ptr<SendBatch> batch;
  thread_local bool tried = false;
  if (tried || batching_unavailable.load(std::memory_order_relaxed)) return thread_batch;
  tried = true;
  try {
    std::unique_ptr<SendBatch> b(new SendBatch());
    b->held_.reserve(kMaxSends);  // add() never allocates
    b->spare_.reserve(kMaxSends);
    auto ring = std::make_unique<Ring>();
    int rc = -EINVAL;
    for (const unsigned flags : {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, 0u}) {
      io_uring_params params{};
      params.flags = flags;
      rc = io_uring_queue_init_params(kMaxSends, &ring->ring, &params);
      if (rc == 0) break;
    }
    if (rc != 0) {
      say_unavailable(std::strerror(-rc));
      return nullptr;
    }
    b->ring_ = std::move(ring);
    batch = std::move(b);
  } catch (const std::bad_alloc&) {
    return nullptr;  // the next write goes out at once; nothing lost
  }
  thread_batch = batch.get();
  SendBatchScope::set_flush(&SendBatch::flush_thread);
  return thread_batch;
}

void SendBatch::submit(std::vector<Send>& sends) noexcept {
  io_uring* ring = &ring_->ring;
  unsigned queued = 0;
  for (std::size_t i = 0; i < sends.size(); ++i) {
    Send& s = sends[i];
    const int fd = s.conn->socket_fd();
    if (fd < 0) {
      s.result = -EBADF;
      continue;
    }
    io_uring_sqe* sqe = io_uring_get_sqe(ring);  // never null: at most kMaxSends held
    io_uring_prep_send(sqe, fd, s.bytes->data(), s.bytes->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    sqe->user_data = i;
    ++queued;
  }
  if (queued == 0) return;
  // The sends complete inline (MSG_DONTWAIT): their completions are there
  // when the call returns; -EINTR can only cut the wait short.
  int rc = 0;
  do rc = io_uring_submit_and_wait(ring, queued);
  while (rc == -EINTR);
  for (unsigned seen = 0; rc >= 0 && seen < queued; ++seen) {
    io_uring_cqe* cqe = nullptr;
    do rc = io_uring_wait_cqe(ring, &cqe);
    while (rc == -EINTR);
    if (rc < 0) break;
    sends[cqe->user_data].result = cqe->res;
    io_uring_cqe_seen(ring, cqe);
  }
  // A lost completion would leave bytes neither sent nor queued: never go on.
  if (rc < 0) std::abort();
}

#else

struct SendBatch::Ring {};

SendBatch* SendBatch::of_thread() noexcept {
  if (!batching_unavailable.load(std::memory_order_relaxed))
    say_unavailable("heartwheel was built without liburing");
  return nullptr;
}

void SendBatch::submit(std::vector<Send>& sends) noexcept {
  for (Send& s : sends) s.result = -EAGAIN;  // never reached: no batch exists
}

#endif

SendBatch::~SendBatch() {
  // At the thread's end no scope is open, so nothing is held: the
  // connections a held send points to may be gone by now.
  if (thread_batch == this) thread_batch = nullptr;
}

void SendBatch::flush_thread() noexcept {
  if (thread_batch != nullptr) thread_batch->flush();
}

void SendBatch::add(Connection& conn, const SharedBytes& bytes) noexcept {
  held_.push_back({&conn, bytes, 0});  // within the reserved capacity (but after a nested flush)
  if (held_.size() >= kMaxSends) flush();
}

void SendBatch::flush() noexcept {
  if (held_.empty()) return;
  // Finished from the other buffer: a callback below may hold new sends
  // (and flush them) meanwhile.
  std::vector<Send> sends;
  sends.swap(held_);
  held_.swap(spare_);
  submit(sends);
  for (Send& s : sends) s.conn->finish_batched(s.bytes, s.result);
  for (Send& s : sends) s.conn->after_batched();
  sends.clear();
  if (spare_.capacity() < sends.capacity()) spare_.swap(sends);
}

}  // namespace heartwheel::net
