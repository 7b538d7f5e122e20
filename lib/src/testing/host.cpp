// See heartwheel/testing/host.h. Connections sit on one end of an AF_UNIX
// socket pair opened as a uv_tcp_t (libuv streams do not care); the loop only
// moves bytes, the ManualTimerService alone decides what time it is.
#include <heartwheel/common/error.h>
#include <heartwheel/testing/host.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace heartwheel::testing {

namespace {
// Loop iterations per poll(): one delivers reads and runs callbacks, the next
// ones finish writes queued by them and the closes they started.
constexpr int kPollIterations = 4;
}  // namespace

Host::Host(net::ConnectionOptions options, Duration tick, TimePoint start)
    : options_(std::move(options)), timers_(tick, start) {
  options_.validate();
  check_uv(uv_loop_init(&loop_), "uv_loop_init");
}

Host::~Host() {
  // Also the ones flushing before a close: a peer that never reads would
  // keep their write, and this loop, alive forever.
  for (auto& p : peers_)
    if (p->conn_) p->conn_->close(net::CloseReason::local);
  uv_run(&loop_, UV_RUN_DEFAULT);  // close callbacks: on_close runs, connections are freed
  for (auto& p : peers_)
    if (p->fd_ >= 0) ::close(p->fd_);
  uv_loop_close(&loop_);
}

Peer& Host::open(net::Handler& handler) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::system_error(errno, std::generic_category(), "testing::Host: socketpair");
  peers_.push_back(std::unique_ptr<Peer>(new Peer(*this, sv[1])));
  Peer& peer = *peers_.back();
  auto* conn = make_connection(handler, next_id_++);
  int rc = uv_tcp_init(&loop_, conn->handle());
  if (rc < 0) {
    delete conn;
    ::close(sv[0]);
    check_uv(rc, "testing::Host: uv_tcp_init");
  }
  peer.conn_ = conn;
  ++stats_.accepted;
  ++stats_.current;
  if (stats_.current > stats_.peak) stats_.peak = stats_.current;
  rc = uv_tcp_open(conn->handle(), sv[0]);
  if (rc < 0) {
    ::close(sv[0]);
    conn->close(net::CloseReason::error, uv_error(rc));
  } else {
    open_connection(*conn);  // on failure it is already closing, with the reason set
  }
  poll();
  return peer;
}

void Host::poll() {
  for (int i = 0; i < kPollIterations; ++i) uv_run(&loop_, UV_RUN_NOWAIT);
}

void Host::run_for(Duration d) {
  poll();
  timers_.run_for(d);
  poll();
}

void Host::connection_closed(net::Connection& conn) noexcept {
  for (auto& p : peers_) {
    if (p->conn_ != &conn) continue;
    p->reason_ = conn.close_reason();
    p->conn_ = nullptr;
  }
  --stats_.current;
  delete &conn;
}

void Peer::send(std::string_view bytes) {
  if (fd_ < 0) throw std::logic_error("testing::Peer::send after close()");
  // Write what the socket takes, let the connection read, repeat: a test may
  // send more than the socket buffer holds.
  for (int stuck = 0; !bytes.empty();) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      stuck = 0;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      throw std::system_error(errno, std::generic_category(), "testing::Peer::send");
    } else if (++stuck > 1000) {
      throw std::runtime_error("testing::Peer::send: the connection does not read");
    }
    host_->poll();
  }
}

std::string Peer::received() {
  host_->poll();
  std::string out;
  if (fd_ < 0) return out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < sizeof buf) host_->poll();  // more may be queued
  }
  return out;
}

std::string Peer::received(std::size_t at_most) {
  host_->poll();
  std::string out;
  if (fd_ < 0) return out;
  char buf[16384];
  while (out.size() < at_most) {
    const ssize_t n = ::recv(fd_, buf, std::min(sizeof buf, at_most - out.size()), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void Peer::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
  host_->poll();
}

void Peer::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  host_->poll();
}

}  // namespace heartwheel::testing
