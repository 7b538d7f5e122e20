// See loopback.h.
#include "loopback.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "receivers.h"

namespace fanout_floor {

namespace {

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

int listen_loopback(sockaddr_in& address) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) fail("socket");
  address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), len) != 0) fail("bind 127.0.0.1:0");
  if (listen(fd, 4096) != 0) fail("listen");
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) fail("getsockname");
  return fd;
}

std::vector<int> accept_all(int listener, std::size_t n, const ReceiverFleet& fleet,
                            std::chrono::milliseconds timeout) {
  std::vector<int> fds;
  fds.reserve(n);
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (fds.size() < n) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
    if (fd >= 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fds.push_back(fd);
      continue;
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) fail("accept");
    if (fleet.failed()) throw std::runtime_error("a receiver process could not connect");
    if (std::chrono::steady_clock::now() >= until)
      throw std::runtime_error("only " + std::to_string(fds.size()) + " of " + std::to_string(n) +
                               " receivers connected in time");
    pollfd p{listener, POLLIN, 0};
    poll(&p, 1, 100);
  }
  return fds;
}

std::size_t raise_open_files_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  getrlimit(RLIMIT_NOFILE, &lim);
  return static_cast<std::size_t>(lim.rlim_cur);
}

}  // namespace fanout_floor
