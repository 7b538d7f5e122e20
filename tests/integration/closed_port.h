// tests/integration/closed_port.h - a loopback port where a connect is
// refused for as long as the object lives.
//
// The socket is bound to 127.0.0.1:0 and never listens, so a SYN to it gets a
// reset (ECONNREFUSED). Holding the binding is the point: a port that was
// bound and then closed is free again, and while tests run in parallel
// another test's listener may take it, or a client's connect() may pick it as
// its own source port and connect to itself (TCP simultaneous open). A bound
// port is neither given to another bind() nor chosen as an ephemeral port.
//
// ClosedPort(port) holds a given port the same way, with SO_REUSEADDR: a
// stopped server's, until it comes back on it. A server that sets
// SO_REUSEADDR too (redis-server, every libuv server) can bind and listen on
// it while it is held; let the hold go once it listens.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace heartwheel::test {

class ClosedPort {
 public:
  ClosedPort() : ClosedPort(0, false) {}
  // Throws std::runtime_error if `port` is taken (bound without
  // SO_REUSEADDR, or listened on).
  explicit ClosedPort(int port) : ClosedPort(port, true) {}
  ~ClosedPort() { ::close(fd_); }
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;

  int port() const { return port_; }

 private:
  ClosedPort(int port, bool reuse_addr) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) fail("socket");
    const int one = 1;
    if (reuse_addr && ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
      fail("SO_REUSEADDR");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) fail("bind");
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) fail("getsockname");
    port_ = ntohs(addr.sin_port);
  }

  [[noreturn]] void fail(const char* what) {
    const std::string message = std::string("ClosedPort: ") + what + ": " + std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    throw std::runtime_error(message);
  }

  int fd_;
  int port_ = 0;
};

}  // namespace heartwheel::test
