// See senders.h: the io_uring sends. Built only with liburing
// (HEARTWHEEL_FANOUT_FLOOR_URING); otherwise UringSender refuses to start.
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "send_rest.h"
#include "senders.h"

#ifdef HEARTWHEEL_FANOUT_FLOOR_URING
#include <liburing.h>
#include <sys/socket.h>
#endif

namespace fanout_floor {

#ifdef HEARTWHEEL_FANOUT_FLOOR_URING

struct UringSender::Ring {
  io_uring ring{};
  unsigned flags = 0;
};

bool uring_built() noexcept { return true; }

UringSender::UringSender(const std::vector<int>& fds, unsigned batch, bool fixed_files)
    : ring_(std::make_unique<Ring>()), fds_(fds), batch_(batch), fixed_(fixed_files) {
  // One thread submits and the completions are reaped in the same call: the
  // kernel may skip the locking and task-work signalling meant for sharing.
  const unsigned wanted[] = {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, 0};
  int rc = -EINVAL;
  for (const unsigned flags : wanted) {
    io_uring_params params{};
    params.flags = flags;
    rc = io_uring_queue_init_params(batch, &ring_->ring, &params);
    if (rc == 0) {
      ring_->flags = flags;
      break;
    }
  }
  if (rc != 0)
    throw std::runtime_error(std::string("io_uring_queue_init failed: ") + std::strerror(-rc));
  if (fixed_) {
    rc = io_uring_register_files(&ring_->ring, fds.data(), static_cast<unsigned>(fds.size()));
    if (rc != 0) {
      io_uring_queue_exit(&ring_->ring);
      throw std::runtime_error(std::string("io_uring_register_files failed: ") +
                               std::strerror(-rc));
    }
  }
}

UringSender::~UringSender() { io_uring_queue_exit(&ring_->ring); }

unsigned UringSender::setup_flags() const noexcept { return ring_->flags; }

void UringSender::send(std::string_view frame, SendCounts& counts) {
  io_uring* ring = &ring_->ring;
  const std::size_t n = fds_.size();
  for (std::size_t at = 0; at < n;) {
    const std::size_t end = std::min(n, at + batch_);
    for (std::size_t i = at; i < end; ++i) {
      io_uring_sqe* sqe = io_uring_get_sqe(ring);  // never null: the batch fits the ring
      const int target = fixed_ ? static_cast<int>(i) : fds_[i];
      io_uring_prep_send(sqe, target, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (fixed_) sqe->flags |= IOSQE_FIXED_FILE;
      sqe->user_data = i;
    }
    const unsigned want = static_cast<unsigned>(end - at);
    int rc = io_uring_submit_and_wait(ring, want);
    ++counts.syscalls;
    if (rc < 0) throw std::runtime_error(std::string("io_uring_enter: ") + std::strerror(-rc));
    unsigned seen = 0;
    while (seen < want) {
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_wait_cqe(ring, &cqe);  // already there: the sends completed inline
      if (rc < 0) throw std::runtime_error(std::string("io_uring_wait_cqe: ") + std::strerror(-rc));
      const std::size_t i = cqe->user_data;
      const int res = cqe->res;
      io_uring_cqe_seen(ring, cqe);
      ++seen;
      ++counts.sends;
      if (res == static_cast<int>(frame.size())) continue;
      if (res < 0 && res != -EAGAIN)
        throw std::runtime_error(std::string("send to a receiver failed: ") + std::strerror(-res));
      ++counts.short_sends;
      send_rest(fds_[i], frame.substr(res > 0 ? static_cast<std::size_t>(res) : 0));
    }
    at = end;
  }
}

#else

struct UringSender::Ring {};

bool uring_built() noexcept { return false; }

UringSender::UringSender(const std::vector<int>& fds, unsigned batch, bool fixed_files)
    : fds_(fds), batch_(batch), fixed_(fixed_files) {
  throw std::runtime_error("built without liburing (apt-get install liburing-dev, reconfigure)");
}

UringSender::~UringSender() = default;

unsigned UringSender::setup_flags() const noexcept { return 0; }

void UringSender::send(std::string_view, SendCounts&) {}

#endif

}  // namespace fanout_floor
