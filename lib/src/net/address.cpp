// See heartwheel/net/address.h.
#include <heartwheel/net/address.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>
#include <uv.h>

#include <heartwheel/common/error.h>

namespace heartwheel::net {

HostPort parse_host_port(std::string_view text) {
  auto fail = [&]() -> HostPort {
    throw std::invalid_argument("invalid address '" + std::string(text) +
                                "': expected HOST:PORT such as 127.0.0.1:8080, [::1]:0 or :8080");
  };
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return fail();
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  int port = -1;
  const auto [ptr, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || ptr != port_text.data() + port_text.size() || port < 0 || port > 65535)
    return fail();
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  HostPort hp{std::string(host), port};
  if (hp.host.empty()) hp.host = "0.0.0.0";
  if (hp.host == "localhost") hp.host = "127.0.0.1";
  sockaddr_storage ss;
  if (to_sockaddr(hp, ss)) return fail();
  return hp;
}

std::error_code to_sockaddr(const HostPort& hp, sockaddr_storage& out) noexcept {
  std::memset(&out, 0, sizeof out);
  if (uv_ip4_addr(hp.host.c_str(), hp.port, reinterpret_cast<sockaddr_in*>(&out)) == 0) return {};
  if (uv_ip6_addr(hp.host.c_str(), hp.port, reinterpret_cast<sockaddr_in6*>(&out)) == 0) return {};
  return uv_error(UV_EINVAL);
}

std::string format_host_port(const HostPort& hp) {
  const bool v6 = hp.host.find(':') != std::string::npos;
  return (v6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(hp.port);
}

std::string format_address(const sockaddr* addr) {
  char ip[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    uv_ip4_name(in, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    uv_ip6_name(in6, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return {};
}

int port_of(const sockaddr* addr) noexcept {
  if (addr->sa_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in*>(addr)->sin_port);
  if (addr->sa_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_port);
  return 0;
}

int open_reuseport_socket(const sockaddr* addr, std::error_code& error) noexcept {
  const int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = uv_error(-errno);
    return -1;
  }
  const int one = 1;
  const socklen_t len = addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      ::bind(fd, addr, len) != 0) {
    error = uv_error(-errno);
    ::close(fd);
    return -1;
  }
  error.clear();
  return fd;
}

void ignore_sigpipe() noexcept {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if (current.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace heartwheel::net
