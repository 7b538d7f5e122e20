// What both install consumers do once their server listens: a raw libuv
// client connects to it over loopback, sends one request, collects the answer
// until the server closes, then closes the server's connections so the loop
// can end. Header-only, so each consumer stays one translation unit.
#pragma once

#include <heartwheel/net/server.h>
#include <heartwheel/timer/loop_wheel.h>
#include <uv.h>

#include <optional>
#include <string>

namespace install_check {

namespace hw = heartwheel;
using namespace std::chrono_literals;

struct Client {
  uv_tcp_t tcp{};
  uv_connect_t connect{};
  uv_write_t write{};
  std::string request;
  std::string answer;
  hw::net::Server* server = nullptr;
  bool done = false;

  static void on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
    auto* c = static_cast<Client*>(stream->data);
    if (n > 0) c->answer.append(buf->base, static_cast<std::size_t>(n));
    delete[] buf->base;
    if (n < 0) {  // EOF (the server closed after answering) or an error
      c->finish();
    }
  }
  static void on_connect(uv_connect_t* req, int status) {
    auto* c = static_cast<Client*>(req->data);
    if (status != 0) return c->finish();
    uv_buf_t buf = uv_buf_init(c->request.data(), static_cast<unsigned>(c->request.size()));
    uv_write(&c->write, reinterpret_cast<uv_stream_t*>(&c->tcp), &buf, 1, nullptr);
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&c->tcp),
        [](uv_handle_t*, std::size_t size, uv_buf_t* b) { *b = uv_buf_init(new char[size], size); },
        on_read);
  }
  void finish() {
    done = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&tcp), nullptr);
    server->close_all();
  }
};

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

// Sends `request` to the listening `server` (on `wheel`'s loop) and returns
// what came back before the server closed; nullopt if nothing ended within 10 s.
inline std::optional<std::string> ask_server(hw::LoopWheel& wheel, hw::net::Server& server,
                                             std::string request) {
  uv_loop_t* loop = server.loop();
  Watchdog watchdog;
  watchdog.server = &server;
  wheel.schedule(watchdog, 10s);
  Client client;
  client.request = std::move(request);
  client.server = &server;
  client.tcp.data = &client;
  client.connect.data = &client;
  uv_tcp_init(loop, &client.tcp);
  sockaddr_in addr{};
  uv_ip4_addr("127.0.0.1", server.port(), &addr);
  uv_tcp_connect(&client.connect, &client.tcp, reinterpret_cast<const sockaddr*>(&addr),
                 &Client::on_connect);
  // Runs until the client has its answer and the server closed everything;
  // the watchdog is the only wheel entry left then, so cancel it to let the
  // loop end.
  while (!client.done && !watchdog.fired) uv_run(loop, UV_RUN_ONCE);
  wheel.cancel(watchdog);
  uv_run(loop, UV_RUN_DEFAULT);
  if (watchdog.fired) return std::nullopt;
  return client.answer;
}

}  // namespace install_check
