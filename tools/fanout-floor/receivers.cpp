// See receivers.h. A child: connect its share of the sockets (blocking
// connect() on loopback completes as soon as the parent's listener queues
// it), make them non-blocking, then one epoll loop reading into one buffer.
#include "receivers.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace fanout_floor {

struct alignas(64) ReceiverSlot {
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<bool> failed{false};
};

namespace {

[[noreturn]] void child_main(ReceiverSlot& slot, const sockaddr_in& to, std::size_t n,
                             pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the parent died before the prctl
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  const int ep = epoll_create1(0);
  if (ep < 0) {
    slot.failed = true;
    _exit(1);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
      slot.failed = true;
      _exit(1);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  std::size_t open = n;
  static char buf[1 << 16];
  epoll_event events[256];
  while (open > 0) {
    const int k = epoll_wait(ep, events, 256, 1000);
    if (k < 0 && errno != EINTR) _exit(1);
    for (int e = 0; e < k; ++e) {
      const int fd = events[e].data.fd;
      for (;;) {
        const ssize_t r = read(fd, buf, sizeof buf);
        if (r > 0) {
          slot.bytes.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
          continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) break;
        close(fd);  // EOF or an error: the sender is done with it
        --open;
        break;
      }
    }
  }
  _exit(0);
}

}  // namespace

ReceiverFleet::ReceiverFleet(const sockaddr_in& listener, std::size_t n, std::size_t per_process) {
  count_ = (n + per_process - 1) / per_process;
  void* mem = mmap(nullptr, count_ * sizeof(ReceiverSlot), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error("mmap of the receivers' counters failed");
  slots_ = static_cast<ReceiverSlot*>(mem);
  for (std::size_t i = 0; i < count_; ++i) new (&slots_[i]) ReceiverSlot;
  const pid_t parent = getpid();
  std::size_t left = n;
  for (std::size_t i = 0; i < count_; ++i) {
    const std::size_t share = left / (count_ - i);  // even shares
    left -= share;
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork of a receiver process failed");
    if (pid == 0) child_main(slots_[i], listener, share, parent);
    children_.push_back(pid);
  }
}

ReceiverFleet::~ReceiverFleet() {
  for (const pid_t pid : children_) kill(pid, SIGKILL);
  for (const pid_t pid : children_) waitpid(pid, nullptr, 0);
  if (slots_ != nullptr) munmap(slots_, count_ * sizeof(ReceiverSlot));
}

std::uint64_t ReceiverFleet::bytes_read() const noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < count_; ++i) sum += slots_[i].bytes.load(std::memory_order_relaxed);
  return sum;
}

bool ReceiverFleet::failed() const noexcept {
  for (std::size_t i = 0; i < count_; ++i)
    if (slots_[i].failed.load()) return true;
  return false;
}

bool ReceiverFleet::wait_exit(int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool ok = true;
  while (!children_.empty()) {
    int status = 0;
    const pid_t pid = waitpid(children_.back(), &status, WNOHANG);
    if (pid == children_.back()) {
      ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
      children_.pop_back();
      continue;
    }
    if (std::chrono::steady_clock::now() >= until) return false;  // the destructor kills them
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ok;
}

}  // namespace fanout_floor
