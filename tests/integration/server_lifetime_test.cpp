// Destroying a Server (or the host of a connection) while its connections
// still have writes in flight: every callback libuv still delivers to an
// abandoned connection must find it safe (no host left to count into).
#include <heartwheel/net/server.h>

#include <memory>

#include <sys/socket.h>
#include <unistd.h>

#include "net_test_support.h"

using namespace hwtest;

namespace {

// Reads whatever the socket holds right now.
std::size_t drain_socket(int fd) {
  char buf[65536];
  std::size_t total = 0;
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return total;
    total += static_cast<std::size_t>(n);
  }
}

}  // namespace

TEST_CASE("A Server destroyed from inside on_writable, with a write completed but unreported, is safe",
          "[net][lifetime]") {
  // The sequence that used to crash: the connection's in-flight write
  // completes; it starts the pending bytes, which the emptied socket takes at
  // once (libuv reports such a write later, from its pending queue); the
  // queue is now below the low watermark, so on_writable(true) runs, and the
  // handler destroys the Server. The connection is abandoned, and libuv then
  // reports the completed write to a connection that has no host any more.
  TestLoop t;
  struct Destroyer final : net::Handler {
    void on_open(net::Connection& c) override { conn = &c; }
    void on_data(net::Connection&, std::string_view) override {}
    void on_writable(net::Connection&, bool writable) override {
      if (!writable) return;
      server.reset();
      destroyed = true;
    }
    void on_close(net::Connection&, net::CloseReason, std::error_code) override { ++closed; }
    net::Connection* conn = nullptr;
    std::unique_ptr<net::Server> server;
    bool destroyed = false;
    int closed = 0;
  } handler;
  net::ServerOptions o;
  o.connection.write.high_watermark = 256 * 1024;
  o.connection.write.low_watermark = 128 * 1024;
  handler.server = std::make_unique<net::Server>(*t.wheel, handler, o);
  REQUIRE_FALSE(handler.server->listen());
  const int peer = connect_blocking(handler.server->port());
  REQUIRE(t.run_until([&] { return handler.conn != nullptr; }));
  REQUIRE_FALSE(handler.conn->write(std::string(8 << 20, 'q')));  // fills the socket, rest in flight
  REQUIRE_FALSE(handler.conn->write(std::string(64 * 1024, 'p')));  // pending behind it
  REQUIRE_FALSE(handler.conn->writable());
  for (int i = 0; i < 4000 && !handler.destroyed; ++i) {
    drain_socket(peer);
    uv_run(&t.loop, UV_RUN_NOWAIT);
  }
  REQUIRE(handler.destroyed);
  for (int i = 0; i < 10; ++i) uv_run(&t.loop, UV_RUN_NOWAIT);
  CHECK(handler.closed == 0);  // abandoned: closed without callbacks
  ::close(peer);
}

TEST_CASE("A Server destroyed from inside on_writable, with new bytes in flight, is safe",
          "[net][lifetime]") {
  TestLoop t;
  struct Destroyer final : net::Handler {
    void on_open(net::Connection& c) override { conn = &c; }
    void on_data(net::Connection&, std::string_view) override {}
    void on_writable(net::Connection& c, bool writable) override {
      if (!writable) return;
      // Queue more first, so a write is in flight when the server goes.
      [[maybe_unused]] auto ec = c.write(std::string(512 * 1024, 'x'));
      server.reset();
      destroyed = true;
    }
    net::Connection* conn = nullptr;
    std::unique_ptr<net::Server> server;
    bool destroyed = false;
  } handler;
  net::ServerOptions o;
  o.connection.write.high_watermark = 256 * 1024;
  o.connection.write.low_watermark = 64 * 1024;
  handler.server = std::make_unique<net::Server>(*t.wheel, handler, o);
  REQUIRE_FALSE(handler.server->listen());
  const int peer = connect_blocking(handler.server->port());
  REQUIRE(t.run_until([&] { return handler.conn != nullptr; }));
  REQUIRE_FALSE(handler.conn->write(std::string(8 << 20, 'q')));
  REQUIRE_FALSE(handler.conn->writable());
  for (int i = 0; i < 4000 && !handler.destroyed; ++i) {
    drain_socket(peer);
    uv_run(&t.loop, UV_RUN_NOWAIT);
  }
  REQUIRE(handler.destroyed);
  for (int i = 0; i < 50; ++i) {
    drain_socket(peer);
    uv_run(&t.loop, UV_RUN_NOWAIT);
  }
  ::close(peer);
}

TEST_CASE("accept_pause under 1 ms is refused: it is what stops an EMFILE spin", "[net][limits]") {
  net::ServerOptions o;
  o.accept_pause = Duration{0};
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("accept_pause"));
  o.accept_pause = std::chrono::microseconds(999);
  CHECK_THROWS_AS(o.validate(), std::invalid_argument);
  o.accept_pause = std::chrono::milliseconds(1);
  CHECK_NOTHROW(o.validate());
}
