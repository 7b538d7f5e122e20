// heartwheel/net/address.h - "HOST:PORT" strings, socket addresses and the
// SO_REUSEPORT listening socket libuv 1.44 cannot make itself.
// Threads: pure functions, any thread.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

#include <sys/socket.h>

namespace heartwheel::net {

struct HostPort {
  std::string host;  // "127.0.0.1", "::1", "0.0.0.0"
  int port = 0;      // 0 = let the kernel pick (listeners only)
};

// Parses "127.0.0.1:8080", "[::1]:0", ":8080" (host 0.0.0.0), "localhost:80"
// ("localhost" is read as 127.0.0.1; no DNS). Throws std::invalid_argument
// with the text and the accepted forms.
HostPort parse_host_port(std::string_view text);

// Fills `out` from a numeric host and a port. Errors: UV_EINVAL as
// uv_error() for a host that is not an IPv4/IPv6 literal.
std::error_code to_sockaddr(const HostPort& hp, sockaddr_storage& out) noexcept;

// "127.0.0.1:8080" / "[::1]:8080".
std::string format_address(const sockaddr* addr);
// The same from a host and a port ("::1", 8080 -> "[::1]:8080"): what
// parse_host_port reads back.
std::string format_host_port(const HostPort& hp);
int port_of(const sockaddr* addr) noexcept;

// A non-blocking, close-on-exec TCP socket with SO_REUSEADDR and SO_REUSEPORT
// set, bound to `addr` but not listening. Hand it to uv_tcp_open(). Several
// such sockets (threads or processes of one user) may bind the same port; the
// kernel spreads new connections over those that listen. Returns the fd, or
// -1 with `error` set (uv_error of the errno).
int open_reuseport_socket(const sockaddr* addr, std::error_code& error) noexcept;

// libuv writes with write(2), so a peer that reset its connection would kill
// the process with SIGPIPE. Sets SIGPIPE to ignored if it is still at its
// default action (a handler the application installed is left alone).
// Server::listen() and Connector::start() call it.
void ignore_sigpipe() noexcept;

}  // namespace heartwheel::net
