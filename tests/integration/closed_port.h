// tests/integration/closed_port.h - a loopback port where a connect is
// refused for as long as the object lives.
//
// The socket is bound to 127.0.0.1:0 and never listens, so a SYN to it gets a
// reset (ECONNREFUSED). Holding the binding is the point: a port that was
// bound and then closed is free again, and while tests run in parallel
// another test's listener may take it, or a client's connect() may pick it as
// its own source port and connect to itself (TCP simultaneous open). A bound
// port is neither given to another bind() nor chosen as an ephemeral port.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace heartwheel::test {

class ClosedPort {
 public:
  ClosedPort() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) fail("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) fail("bind");
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) fail("getsockname");
    port_ = ntohs(addr.sin_port);
  }
  ~ClosedPort() { ::close(fd_); }
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;

  int port() const { return port_; }

 private:
  [[noreturn]] void fail(const char* what) {
    const std::string message = std::string("ClosedPort: ") + what + ": " + std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    throw std::runtime_error(message);
  }

  int fd_;
  int port_ = 0;
};

}  // namespace heartwheel::test
