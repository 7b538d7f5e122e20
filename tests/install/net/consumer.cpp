// A program built against ONE layer of an installed heartwheel, net (and the
// layers below it: timer, common), the way a user who wants only the
// connection manager builds one (tests/install/check_install.sh:
// find_package(heartwheel COMPONENTS net), pkg-config heartwheel-net, Meson
// dependency('heartwheel-net')): a net::Server on port 0 with an echo
// handler, asked over loopback by a raw libuv client. Prints "ok" and exits 0
// when that worked; otherwise says what failed and exits 1. Bounded: gives up
// after 10 s.
#include <heartwheel/net/handler.h>
#include <heartwheel/net/server.h>
#include <heartwheel/timer/loop_wheel.h>
#include <uv.h>

#include <cstdio>
#include <string>

#include "../ask_server.h"

namespace hw = heartwheel;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "net consumer: %s\n", what.c_str());
  return 1;
}

// Echoes what arrives, then closes (after flushing) once the whole request came.
struct EchoOnce final : hw::net::Handler {
  std::string seen;
  void on_data(hw::net::Connection& conn, std::string_view data) override {
    conn.write(data);
    seen.append(data);
    if (seen == "hello from heartwheel") conn.close_after_flush();
  }
};

}  // namespace

int main() {
  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0) return fail("uv_loop_init");
  std::optional<std::string> answer;
  {
    hw::LoopWheel wheel(&loop);
    EchoOnce handler;
    hw::net::Server server(wheel, handler, hw::net::ServerOptions{});  // 127.0.0.1:0
    if (server.listen()) return fail("listen on 127.0.0.1:0");
    answer = install_check::ask_server(wheel, server, "hello from heartwheel");
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the wheel's and server's closing handles
  if (uv_loop_close(&loop) != 0) return fail("handles left open on the loop");
  if (!answer) return fail("no answer within 10 s");
  if (*answer != "hello from heartwheel") return fail("unexpected answer: " + *answer);
  std::puts("ok");
  return 0;
}
