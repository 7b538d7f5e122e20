// A Connection on a manual clock: a real socket pair carries the bytes,
// ManualTimerService carries the time (what Server does on a loop, minus the
// loop's clock), so connection logic is tested without sleeping.
#pragma once

#include <heartwheel/net/connection.h>
#include <heartwheel/virtual_clock.h>

#include <catch2/catch.hpp>

#include <string>

#include <sys/socket.h>
#include <unistd.h>

namespace manual {

using namespace std::chrono_literals;
using heartwheel::ManualTimerService;
using namespace heartwheel::net;

// A host for one Connection on a manual clock (what Server does on a loop).
struct ManualHost final : detail::ConnectionHost {
  explicit ManualHost(ConnectionOptions o) : options(std::move(o)) {
    REQUIRE(uv_loop_init(&loop) == 0);
  }
  ~ManualHost() {
    if (conn && !closed) conn->close();  // a failed REQUIRE left it open
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  const ConnectionOptions& connection_options() const noexcept override { return options; }
  NetStats& net_stats() noexcept override { return stats; }
  heartwheel::TimerService& timer_service() noexcept override { return timers; }
  uv_loop_t* host_loop() const noexcept override { return const_cast<uv_loop_t*>(&loop); }
  void connection_closed(Connection& c) noexcept override {
    closed = true;
    delete &c;
  }
  ConnectionOptions options;
  NetStats stats;
  ManualTimerService timers{1ms};
  uv_loop_t loop;
  bool closed = false;
  Connection* conn = nullptr;
};

// Opens a Connection on one end of a socket pair; returns the other end.
inline int open_on_socketpair(ManualHost& host, Connection*& conn, Handler& handler) {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  conn = new Connection(host, handler, 1);
  REQUIRE(uv_tcp_init(&host.loop, conn->handle()) == 0);
  REQUIRE(uv_tcp_open(conn->handle(), sv[0]) == 0);
  host.conn = conn;
  REQUIRE(conn->open() == 0);
  return sv[1];
}

inline std::string drain(int fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

}  // namespace manual
