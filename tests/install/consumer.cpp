// A program built against an INSTALLED heartwheel, the way a user builds one
// (tests/install/check_install.sh: CMake find_package, pkg-config, Meson).
// It touches each layer a consumer links: a bare TimingWheel, a LoopWheel on
// a libuv loop, a net::Server on port 0 with an http::NetHandler (so the
// llhttp compiled into libheartwheel is linked too), answered over loopback
// by a raw libuv client. Prints "ok" and exits 0 when all of that worked;
// otherwise says what failed and exits 1. Bounded: gives up after 10 s.
#include <heartwheel/http/net_handler.h>
#include <heartwheel/loop_wheel.h>
#include <heartwheel/net/server.h>
#include <heartwheel/timing_wheel.h>
#include <uv.h>

#include <cstdio>
#include <string>

using namespace std::chrono_literals;
namespace hw = heartwheel;

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "consumer: %s\n", what);
  return 1;
}

// The client side: connects to the server, sends one request, collects the
// answer until the server closes (Connection: close), then stops the server.
struct Client {
  uv_tcp_t tcp{};
  uv_connect_t connect{};
  uv_write_t write{};
  std::string request = "GET /hello HTTP/1.1\r\nHost: consumer\r\nConnection: close\r\n\r\n";
  std::string answer;
  hw::net::Server* server = nullptr;
  bool done = false;
};

void on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
  auto* c = static_cast<Client*>(stream->data);
  if (n > 0) c->answer.append(buf->base, static_cast<std::size_t>(n));
  delete[] buf->base;
  if (n < 0) {  // EOF (the server closed after answering) or an error
    c->done = true;
    uv_close(reinterpret_cast<uv_handle_t*>(stream), nullptr);
    c->server->close_all();
  }
}

void on_connect(uv_connect_t* req, int status) {
  auto* c = static_cast<Client*>(req->data);
  if (status != 0) {
    c->done = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), nullptr);
    c->server->close_all();
    return;
  }
  uv_buf_t buf = uv_buf_init(c->request.data(), static_cast<unsigned>(c->request.size()));
  uv_write(&c->write, reinterpret_cast<uv_stream_t*>(&c->tcp), &buf, 1, nullptr);
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&c->tcp),
      [](uv_handle_t*, std::size_t size, uv_buf_t* b) { *b = uv_buf_init(new char[size], size); },
      on_read);
}

// Ends a hung run: fires on the loop's wheel after 10 s.
struct Watchdog : hw::TimerEntry {
  Watchdog() : hw::TimerEntry(&fire) {}
  static void fire(hw::TimerEntry& e) {
    auto& self = static_cast<Watchdog&>(e);
    self.fired = true;
    self.server->close_all();
    uv_stop(self.server->loop());
  }
  hw::net::Server* server = nullptr;
  bool fired = false;
};

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

    Watchdog watchdog;
    watchdog.server = &server;
    loop_wheel.schedule(watchdog, 10s);

    Client client;
    client.server = &server;
    client.tcp.data = &client;
    client.connect.data = &client;
    uv_tcp_init(&loop, &client.tcp);
    sockaddr_in addr{};
    uv_ip4_addr("127.0.0.1", server.port(), &addr);
    uv_tcp_connect(&client.connect, &client.tcp, reinterpret_cast<const sockaddr*>(&addr),
                   on_connect);
    // Runs until the client has its answer and the server closed everything;
    // the watchdog is the only wheel entry left then, so cancel it to let the
    // loop end.
    while (!client.done && !watchdog.fired) uv_run(&loop, UV_RUN_ONCE);
    timed_out = watchdog.fired;
    loop_wheel.cancel(watchdog);
    uv_run(&loop, UV_RUN_DEFAULT);
    answer = client.answer;
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the wheel's and server's closing handles
  if (uv_loop_close(&loop) != 0) return fail("handles left open on the loop");
  if (timed_out) return fail("no answer within 10 s");
  if (answer.rfind("HTTP/1.1 200", 0) != 0 ||
      answer.find("hello from heartwheel") == std::string::npos)
    return fail(("unexpected answer: " + answer).c_str());
  std::puts("ok");
  return 0;
}
