// tests/integration/mini_echo_server.h - a small libuv echo server on its own
// thread, closing connections idle for `read_idle` through a LoopWheel.
// It exists so the load harness can be tested on a branch that has no
// heartwheel-echo; it is a test fixture, not the project's echo server.
#pragma once

#include <heartwheel/error.h>
#include <heartwheel/loop_wheel.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <thread>

namespace heartwheel::test {

class MiniEchoServer {
 public:
  explicit MiniEchoServer(Duration read_idle) : read_idle_(read_idle) {
    std::promise<int> port;
    auto ready = port.get_future();
    thread_ = std::thread([this, p = std::move(port)]() mutable { run(p); });
    port_ = ready.get();
  }
  ~MiniEchoServer() {
    uv_async_send(&stop_);
    thread_.join();
  }
  int port() const noexcept { return port_; }
  std::uint64_t accepted() const noexcept { return accepted_; }
  std::uint64_t idle_closed() const noexcept { return idle_closed_; }

 private:
  struct Conn : TimerEntry {
    Conn() : TimerEntry(&on_idle) {}
    uv_tcp_t tcp;
    MiniEchoServer* server;
    TimePoint last_read;
  };

  void run(std::promise<int>& port) {
    uv_loop_init(&loop_);
    wheel_.emplace(&loop_, LoopWheel::Options{std::chrono::milliseconds(5), 20000});
    uv_tcp_init(&loop_, &listener_);
    listener_.data = this;
    sockaddr_in addr{};
    uv_ip4_addr("127.0.0.1", 0, &addr);
    check_uv(uv_tcp_bind(&listener_, reinterpret_cast<const sockaddr*>(&addr), 0), "bind");
    check_uv(uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 4096, &on_connection), "listen");
    int len = sizeof addr;
    uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    uv_async_init(&loop_, &stop_, [](uv_async_t* a) {
      auto* self = static_cast<MiniEchoServer*>(a->data);
      uv_walk(
          a->loop,
          [](uv_handle_t* h, void*) {
            if (!uv_is_closing(h)) {
              if (h->type == UV_TCP && h->data != h->loop->data) {
                auto* c = static_cast<Conn*>(h->data);
                c->server->wheel_->cancel(*c);
                uv_close(h, [](uv_handle_t* hh) { delete static_cast<Conn*>(hh->data); });
              } else if (h->type != UV_TIMER && h->type != UV_PREPARE && h->type != UV_CHECK) {
                uv_close(h, nullptr);
              }
            }
          },
          nullptr);
      self->wheel_.reset();
    });
    stop_.data = this;
    loop_.data = this;
    port.set_value(ntohs(addr.sin_port));
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }

  static void on_connection(uv_stream_t* listener, int status) {
    auto* self = static_cast<MiniEchoServer*>(listener->data);
    if (status < 0) return;
    auto* c = new Conn;
    c->server = self;
    uv_tcp_init(&self->loop_, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) {
      uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp),
               [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
      return;
    }
    ++self->accepted_;
    c->last_read = self->wheel_->now();
    self->wheel_->schedule(*c, self->read_idle_);
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&c->tcp),
        [](uv_handle_t* h, std::size_t, uv_buf_t* buf) {
          static char data[65536];
          (void)h;
          *buf = uv_buf_init(data, sizeof data);
        },
        [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
          auto* conn = static_cast<Conn*>(s->data);
          if (n < 0) return close(*conn);
          // Lazy refresh: only stamp the time; the entry re-arms when it fires.
          conn->last_read = conn->server->wheel_->now();
          uv_buf_t out = uv_buf_init(buf->base, static_cast<unsigned>(n));
          uv_try_write(s, &out, 1);  // a test fixture: small messages always fit
        });
  }

  static void on_idle(TimerEntry& e) {
    auto& c = static_cast<Conn&>(e);
    const TimePoint due = c.last_read + c.server->read_idle_;
    if (due > c.server->wheel_->now()) return c.server->wheel_->schedule_at(c, due);
    ++c.server->idle_closed_;
    close(c);
  }

  static void close(Conn& c) {
    c.server->wheel_->cancel(c);
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&c.tcp)))
      uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp),
               [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
  }

  Duration read_idle_;
  uv_loop_t loop_{};
  std::optional<LoopWheel> wheel_;
  uv_tcp_t listener_{};
  uv_async_t stop_{};
  std::thread thread_;
  int port_ = 0;
  std::atomic<std::uint64_t> accepted_{0}, idle_closed_{0};
};

}  // namespace heartwheel::test
