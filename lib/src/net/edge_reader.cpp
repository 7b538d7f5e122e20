// See edge_reader.h.
#include "edge_reader.h"

#include <heartwheel/net/connection.h>

#include <new>

#ifdef __linux__
#include <sys/epoll.h>
#include <unistd.h>
#endif

namespace heartwheel::net::detail {

#ifdef __linux__

namespace {
// Events taken per wake-up; more wait in the set's ready list, and the loop's
// (level-triggered) watch of the set wakes it again next turn.
constexpr int kBatch = 256;
}  // namespace

bool EdgeReader::start(EdgeReader*& slot, uv_loop_t* loop, int fd, Connection& conn,
                       bool member) noexcept {
  EdgeReader* r = slot;
  if (!r) {
    r = new (std::nothrow) EdgeReader(slot);
    if (!r) return false;
    r->epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (r->epfd_ < 0 || uv_poll_init(loop, &r->poll_, r->epfd_) != 0) {
      if (r->epfd_ >= 0) ::close(r->epfd_);
      delete r;
      return false;
    }
    r->poll_.data = r;
    uv_poll_start(&r->poll_, UV_READABLE, &on_ready);
    uv_unref(reinterpret_cast<uv_handle_t*>(&r->poll_));
    slot = r;
  }
  if (!r->watch(member ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, conn)) {
    if (r->members_ == 0) r->close();  // made for nothing
    return false;
  }
  if (!member) ++r->members_;
  if (r->reading_++ == 0) uv_ref(reinterpret_cast<uv_handle_t*>(&r->poll_));
  return true;
}

void EdgeReader::stop(EdgeReader* r) noexcept {
  if (r && --r->reading_ == 0) uv_unref(reinterpret_cast<uv_handle_t*>(&r->poll_));
}

bool EdgeReader::rearm(EdgeReader* r, int fd, Connection& conn) noexcept {
  return r && r->watch(EPOLL_CTL_MOD, fd, conn);
}

bool EdgeReader::watch(int op, int fd, Connection& conn) noexcept {
  epoll_event e{};
  // EPOLLRDHUP: the peer's FIN is told apart from data, so a read that
  // empties the data still goes on to see the end (edge_reader.h).
  e.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  e.data.ptr = &conn;
  // Both add and modify look at the socket at once: data already waiting
  // (sent with the connect, or while reading was paused) is reported too.
  return epoll_ctl(epfd_, op, fd, &e) == 0;
}

void EdgeReader::leave(EdgeReader*& slot, int fd) noexcept {
  EdgeReader* r = slot;
  if (!r) return;
  // Closing the socket would remove it too, unless the descriptor was
  // duplicated (a fork): removed here, it is never reported again.
  if (fd >= 0) epoll_ctl(r->epfd_, EPOLL_CTL_DEL, fd, nullptr);
  if (--r->members_ == 0) r->close();
}

void EdgeReader::close() noexcept {
  *slot_ = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_), &on_closed);
}

void EdgeReader::on_ready(uv_poll_t* poll, int status, int) {
  auto* r = static_cast<EdgeReader*>(poll->data);
  if (status < 0) return;
  epoll_event events[kBatch];
  const int n = epoll_wait(r->epfd_, events, kBatch, 0);
  // A connection closed by an earlier one's callback has left the set, but
  // may still be in this batch: it is alive until its handle's close
  // callback (a later phase of this turn), and read_ready skips it. So may
  // the reader be, if that was its last member: closed, not yet freed.
  for (int i = 0; i < n; ++i) {
    const bool ended = (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    static_cast<Connection*>(events[i].data.ptr)->read_ready(ended);
  }
}

void EdgeReader::on_closed(uv_handle_t* handle) {
  auto* r = static_cast<EdgeReader*>(handle->data);
  ::close(r->epfd_);
  delete r;
}

#else  // no epoll: connections read through uv_read_start

bool EdgeReader::start(EdgeReader*&, uv_loop_t*, int, Connection&, bool) noexcept { return false; }
void EdgeReader::stop(EdgeReader*) noexcept {}
bool EdgeReader::rearm(EdgeReader*, int, Connection&) noexcept { return false; }
void EdgeReader::leave(EdgeReader*&, int) noexcept {}
bool EdgeReader::watch(int, int, Connection&) noexcept { return false; }
void EdgeReader::close() noexcept {}
void EdgeReader::on_ready(uv_poll_t*, int, int) {}
void EdgeReader::on_closed(uv_handle_t*) {}

#endif

}  // namespace heartwheel::net::detail
