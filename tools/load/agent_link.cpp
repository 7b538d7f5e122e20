#include "agent_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <thread>

namespace heartwheel::load {

std::uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

sockaddr_in parse(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (colon == std::string::npos) throw std::runtime_error("'" + host_port + "' is not HOST:PORT");
  const std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535)
    throw std::runtime_error("'" + host_port + "': the port must be 0..65535");
  a.sin_port = htons(static_cast<std::uint16_t>(p));
  const std::string ip = host.empty() || host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("'" + host_port + "': the host must be an IPv4 address");
  return a;
}

std::string errno_text(const std::string& what, const std::string& where) {
  return what + " " + where + ": " + std::strerror(errno);
}

}  // namespace

int listen_on(const std::string& host_port) {
  const sockaddr_in a = parse(host_port);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(errno_text("socket for", host_port));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    const auto msg = errno_text("cannot listen on", host_port);
    ::close(fd);
    throw std::runtime_error(msg);
  }
  return fd;
}

unsigned bound_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

int connect_to(const std::string& host_port, std::chrono::milliseconds wait) {
  const sockaddr_in a = parse(host_port);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(errno_text("socket for", host_port));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    const auto msg = errno_text("cannot connect to", host_port);
    ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error(msg);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int accept_within(int listen_fd, std::chrono::milliseconds wait) {
  pollfd p{listen_fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return -1;
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

std::string peer_name(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

std::vector<std::string> without_flags(const std::vector<std::string>& argv,
                                       const std::vector<std::string>& with_value,
                                       const std::vector<std::string>& bare) {
  const auto is = [](const std::vector<std::string>& names, const std::string& a) {
    for (const auto& n : names) {
      if (a == n) return true;
    }
    return false;
  };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (is(bare, a)) continue;
    if (is(with_value, a)) {
      ++i;  // and its value
      continue;
    }
    bool dropped = false;
    for (const auto& n : with_value) {
      const bool long_form = n.size() > 2 && a.rfind(n + "=", 0) == 0;
      const bool short_glued = n.size() == 2 && a.size() > 2 && a.rfind(n, 0) == 0 && a[1] != '-';
      if (long_form || short_glued) dropped = true;
    }
    if (!dropped) out.push_back(a);
  }
  return out;
}

LineLink::~LineLink() { close(); }

LineLink::LineLink(LineLink&& other) noexcept
    : fd_(other.fd_), in_(std::move(other.in_)), bad_lines_(other.bad_lines_) {
  other.fd_ = -1;
}

void LineLink::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool LineLink::send(const nlohmann::json& message) {
  if (fd_ < 0) return false;
  const std::string line = message.dump() + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close();
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool LineLink::receive() {
  if (fd_ < 0) return false;
  char buf[65536];
  const ssize_t n = ::read(fd_, buf, sizeof buf);  // a socket or a pipe
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    close();
    return false;
  }
  in_.append(buf, static_cast<std::size_t>(n));
  return true;
}

std::optional<nlohmann::json> LineLink::next() {
  for (std::size_t nl; (nl = in_.find('\n')) != std::string::npos;) {
    const std::string line = in_.substr(0, nl);
    in_.erase(0, nl + 1);
    try {
      auto j = nlohmann::json::parse(line);
      if (j.is_object()) return j;
    } catch (const nlohmann::json::exception&) {
    }
    ++bad_lines_;
  }
  return std::nullopt;
}

std::optional<nlohmann::json> LineLink::wait_message(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (auto m = next()) return m;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || fd_ < 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    if (!receive()) return next();
  }
}

}  // namespace heartwheel::load
