// A program built against an INSTALLED heartwheel, the way a user builds one
// (tests/install/check_install.sh: CMake find_package, pkg-config, Meson).
// It touches each layer a consumer links: a bare TimingWheel, a LoopWheel on
// a libuv loop, a net::Server on port 0 with an http::NetHandler (so the
// llhttp compiled into the http layer is linked too), answered over loopback
// by a raw libuv client; a TLS client session's ClientHello (so libssl, private
// to the tls layer, is linked); and the auth layer's API key (SHA-256 through
// the libcrypto a static auth layer needs at this link). Prints "ok" and exits 0 when all of that worked;
// otherwise says what failed and exits 1. Bounded: gives up after 10 s.
#include <heartwheel/auth/api_key.h>
#include <heartwheel/http/net_handler.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/net/server.h>
#include <heartwheel/timer/timing_wheel.h>
#include <heartwheel/tls/session.h>
#include <uv.h>

#include <cstdio>
#include <string>

#include "ask_server.h"

using namespace std::chrono_literals;
namespace hw = heartwheel;

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "consumer: %s\n", what);
  return 1;
}

struct Count : hw::TimerEntry {
  Count() : hw::TimerEntry([](hw::TimerEntry& e) { ++static_cast<Count&>(e).fired; }) {}
  int fired = 0;
};

}  // namespace

int main() {
  // A bare wheel, driven by hand.
  hw::TimingWheel wheel(1ms);
  Count count;
  wheel.schedule(count, 5ms);
  wheel.advance(wheel.now() + 4ms);
  if (count.fired != 0) return fail("TimingWheel fired early");
  wheel.advance(wheel.now() + 2ms);
  if (count.fired != 1) return fail("TimingWheel did not fire");

  // A server on a LoopWheel, asked once over loopback.
  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0) return fail("uv_loop_init");
  std::string answer;
  bool timed_out = false;
  {
    hw::LoopWheel loop_wheel(&loop);
    hw::http::NetHandler handler({}, [](const hw::http::Request&, hw::http::Responder r) {
      r.respond(200, "hello from heartwheel");
    });
    hw::net::Server server(loop_wheel, handler, hw::net::ServerOptions{});  // 127.0.0.1:0
    if (server.listen()) return fail("listen on 127.0.0.1:0");
    if (server.port() == 0) return fail("no port after listen");
    auto reply = install_check::ask_server(
        loop_wheel, server, "GET /hello HTTP/1.1\r\nHost: consumer\r\nConnection: close\r\n\r\n");
    timed_out = !reply;
    if (reply) answer = *reply;
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the wheel's and server's closing handles
  if (uv_loop_close(&loop) != 0) return fail("handles left open on the loop");
  if (timed_out) return fail("no answer within 10 s");
  if (answer.rfind("HTTP/1.1 200", 0) != 0 ||
      answer.find("hello from heartwheel") == std::string::npos)
    return fail(("unexpected answer: " + answer).c_str());
  const auto key = hw::auth::ApiKey::from_string("consumer-key");
  if (!key.matches("consumer-key") || key.matches("consumer-kez"))
    return fail("auth::ApiKey does not match itself alone");

  // A TLS client's first flight, in memory.
  hw::tls::ContextOptions tls_options;
  tls_options.role = hw::tls::Role::client;
  tls_options.insecure = true;
  hw::tls::Context tls_context(tls_options);
  hw::tls::Session session = hw::tls::Session::client(tls_context, "localhost");
  std::string hello;
  if (!session.start(hello) || hello.size() < 5 || hello[0] != 0x16)
    return fail("no TLS ClientHello");
  std::puts("ok");
  return 0;
}
