// See edge_reader.h.
#include "edge_reader.h"

#include <heartwheel/net/connection.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

namespace heartwheel::net::detail {

namespace {
// Events taken per wake-up; more wait in the set's ready list, and the loop's
// (level-triggered) watch of the set wakes it again next turn.
constexpr int kBatch = 256;

// The thread's readers, one per loop it runs (usually one).
thread_local EdgeReader* t_readers = nullptr;
thread_local unsigned t_refuse = 0;
constexpr int kReadsPerTurn = 32;
thread_local int t_reads_per_turn = kReadsPerTurn;

// Connections are at least 8-byte aligned: the pointer is the event's data
// whole, its low bits zero (checked on the way in).
std::uint64_t to_data(Connection& conn) noexcept { return reinterpret_cast<std::uintptr_t>(&conn); }
}  // namespace

bool EdgeReader::edge_reads_enabled() noexcept {
  static const bool enabled = [] {
    const char* v = std::getenv("HEARTWHEEL_EDGE_READS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

void EdgeReader::refuse_next_for_testing(unsigned n) noexcept { t_refuse = n; }

int EdgeReader::reads_per_turn() noexcept { return t_reads_per_turn; }

void EdgeReader::set_reads_per_turn_for_testing(int n) noexcept {
  t_reads_per_turn = n > 0 ? n : kReadsPerTurn;
}

EdgeReader* EdgeReader::find(uv_loop_t* loop) noexcept {
  for (EdgeReader* r = t_readers; r; r = r->next_)
    if (r->loop_ == loop) return r;
  return nullptr;
}

EdgeReader* EdgeReader::make(uv_loop_t* loop) noexcept {
  if (t_refuse > 0) {
    --t_refuse;
    return nullptr;
  }
  auto* r = new (std::nothrow) EdgeReader(loop);
  if (!r) return nullptr;
  try {
    r->left_.reserve(kBatch);
  } catch (...) {
    delete r;
    return nullptr;
  }
  r->epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (r->epfd_ < 0 || uv_poll_init(loop, &r->poll_, r->epfd_) != 0) {
    if (r->epfd_ >= 0) ::close(r->epfd_);
    delete r;
    return nullptr;
  }
  r->poll_.data = r;
  if (uv_poll_start(&r->poll_, UV_READABLE, &on_ready) != 0) {
    // Its handle is initialised: it must be closed like any, then freed.
    uv_close(reinterpret_cast<uv_handle_t*>(&r->poll_), &on_closed);
    return nullptr;
  }
  uv_unref(reinterpret_cast<uv_handle_t*>(&r->poll_));
  r->next_ = t_readers;
  t_readers = r;
  return r;
}

bool EdgeReader::start(uv_loop_t* loop, int fd, Connection& conn, bool member) noexcept {
  EdgeReader* r = find(loop);
  assert((r != nullptr || !member) && "a member's reader outlives it");
  if (!r && !(r = make(loop))) return false;
  if (!r->watch(member ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, conn)) {
    r->close_if_unused();  // made for nothing
    return false;
  }
  if (!member) ++r->members_;
  if (r->reading_++ == 0) uv_ref(reinterpret_cast<uv_handle_t*>(&r->poll_));
  return true;
}

void EdgeReader::stop(uv_loop_t* loop) noexcept {
  EdgeReader* r = find(loop);
  assert(r && r->reading_ > 0);
  if (r && --r->reading_ == 0) uv_unref(reinterpret_cast<uv_handle_t*>(&r->poll_));
}

bool EdgeReader::rearm(uv_loop_t* loop, int fd, Connection& conn) noexcept {
  EdgeReader* r = find(loop);
  return r && r->watch(EPOLL_CTL_MOD, fd, conn);
}

bool EdgeReader::watch(int op, int fd, Connection& conn) noexcept {
  assert((to_data(conn) & 7) == 0);
  epoll_event e{};
  // EPOLLRDHUP: the peer's FIN is told apart from data, so a read that
  // empties the data still goes on to see the end (edge_reader.h).
  e.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  e.data.u64 = to_data(conn);
  // Both add and modify look at the socket at once: data already waiting
  // (sent with the connect, or while reading was paused) is reported too.
  return epoll_ctl(epfd_, op, fd, &e) == 0;
}

void EdgeReader::leave(uv_loop_t* loop, int fd, const Connection& conn) noexcept {
  EdgeReader* r = find(loop);
  assert(r && r->members_ > 0);
  if (!r) return;
  // Closing the socket would remove it too, unless the descriptor was
  // duplicated (a fork): removed here, it is never reported again.
  if (fd >= 0) epoll_ctl(r->epfd_, EPOLL_CTL_DEL, fd, nullptr);
  if (r->dispatching_) {
    // Its events still in this batch are stale (edge_reader.h).
    ++r->generation_;
    try {
      r->left_.push_back(&conn);  // reserved for a batch's worth; more may allocate
    } catch (...) {
      // Out of memory: its events in the batch fall to read_ready's own
      // check (a closing connection reads nothing; freed in a later phase).
    }
  }
  --r->members_;
  r->close_if_unused();
}

bool EdgeReader::hold(uv_loop_t* loop) noexcept {
  if (!edge_reads_enabled()) return false;
  EdgeReader* r = find(loop);
  if (!r && !(r = make(loop))) return false;
  ++r->holders_;
  return true;
}

void EdgeReader::release(uv_loop_t* loop) noexcept {
  EdgeReader* r = find(loop);
  assert(r && r->holders_ > 0 && "hold and release on the loop's thread");
  if (!r || r->holders_ == 0) return;
  --r->holders_;
  r->close_if_unused();
}

void EdgeReader::close() noexcept {
  for (EdgeReader** p = &t_readers; *p; p = &(*p)->next_) {
    if (*p == this) {
      *p = next_;
      break;
    }
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_), &on_closed);
}

bool EdgeReader::left_in_batch(const Connection* conn) const noexcept {
  return std::find(left_.begin(), left_.end(), conn) != left_.end();
}

void EdgeReader::on_ready(uv_poll_t* poll, int status, int) {
  auto* r = static_cast<EdgeReader*>(poll->data);
  if (status < 0) return;
  epoll_event events[kBatch];
  const int n = epoll_wait(r->epfd_, events, kBatch, 0);
  // The reader stays allocated through the batch even if its last member
  // leaves meanwhile: close() only starts closing its handle (freed in the
  // loop's closing phase, after this callback).
  const std::uint64_t generation = r->generation_;
  r->dispatching_ = true;
  for (int i = 0; i < n; ++i) {
    auto* conn = reinterpret_cast<Connection*>(static_cast<std::uintptr_t>(events[i].data.u64));
    if (r->generation_ != generation && r->left_in_batch(conn)) {
      ++r->stale_events_;
      continue;
    }
    assert(conn->edge_member_ && "an event of the batch names a member of the set");
    const bool ended = (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    conn->read_ready(ended);
  }
  r->dispatching_ = false;
  r->left_.clear();
}

void EdgeReader::on_closed(uv_handle_t* handle) {
  auto* r = static_cast<EdgeReader*>(handle->data);
  if (r->epfd_ >= 0) ::close(r->epfd_);
  delete r;
}

}  // namespace heartwheel::net::detail
