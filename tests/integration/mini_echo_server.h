// tests/integration/mini_echo_server.h - a small libuv echo server on its own
// thread, closing connections idle for `read_idle` through a LoopWheel.
// In rpc mode it speaks the RPC frames instead: RESPONSE (same id, same
// payload) to every REQUEST, PONG to every PING, and after each RESPONSE a
// PING of its own, so the client's PONG path is exercised too.
// It is a test fixture, not the project's echo server. It was written when
// there was no heartwheel-echo yet; it stays because load_harness_test.cpp
// needs what the real programs do not give: live in-process counters the test
// reads while the harness runs (accepted, idle closes, bad frames, PONGs), an
// RPC peer that writes its frames in 5-byte pieces (so the harness's reader
// meets split headers and payloads) and PINGs after every RESPONSE, and no
// extra process to start. The real heartwheel-echo is tested against the
// harness in load_vs_echo_test.cpp.
#pragma once

#include <heartwheel/common/error.h>
#include <heartwheel/timer/loop_wheel.h>
#include <uv.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace heartwheel::test {

class MiniEchoServer {
 public:
  enum class Protocol { echo, rpc };

  explicit MiniEchoServer(Duration read_idle, Protocol protocol = Protocol::echo)
      : read_idle_(read_idle), protocol_(protocol) {
    // A write to a peer that already closed must fail with EPIPE, not kill
    // the test process (libuv writes with write(), which raises SIGPIPE).
    std::signal(SIGPIPE, SIG_IGN);
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
  std::uint64_t pongs_received() const noexcept { return pongs_; }
  std::uint64_t bad_frames() const noexcept { return bad_frames_; }

 private:
  struct Conn : TimerEntry {
    Conn() : TimerEntry(&on_idle) {}
    uv_tcp_t tcp;
    MiniEchoServer* server;
    TimePoint last_read;
    std::string rx;  // rpc: bytes of an unfinished frame
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
    uv_tcp_nodelay(&c->tcp, 1);
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
          if (conn->server->protocol_ == Protocol::rpc)
            return conn->server->on_rpc_bytes(*conn, buf->base, static_cast<std::size_t>(n));
          uv_buf_t out = uv_buf_init(buf->base, static_cast<unsigned>(n));
          uv_try_write(s, &out, 1);  // a test fixture: small messages always fit
        });
  }

  static std::uint64_t get_be(const unsigned char* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
    return v;
  }

  static void put_frame(std::string& out, unsigned char type, std::uint64_t id,
                        std::string_view payload) {
    const auto length = static_cast<std::uint32_t>(payload.size() + 9);
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>(length >> (8 * i)));
    out.push_back(static_cast<char>(type));
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(id >> (8 * i)));
    out.append(payload);
  }

  void on_rpc_bytes(Conn& c, const char* data, std::size_t n) {
    c.rx.append(data, n);
    std::string out;
    std::size_t pos = 0;
    while (c.rx.size() - pos >= 13) {
      const auto* p = reinterpret_cast<const unsigned char*>(c.rx.data() + pos);
      const auto length = static_cast<std::size_t>(get_be(p, 4));
      if (length < 9) {
        ++bad_frames_;
        return close(c);
      }
      if (c.rx.size() - pos < 4 + length) break;
      const unsigned char type = p[4];
      const std::uint64_t id = get_be(p + 5, 8);
      const std::string_view payload(c.rx.data() + pos + 13, length - 9);
      if (type == 1) {  // REQUEST -> RESPONSE, then a PING of ours
        put_frame(out, 2, id, payload);
        put_frame(out, 3, id, "12345678");
      } else if (type == 3) {  // PING -> PONG
        put_frame(out, 4, id, payload);
      } else if (type == 4) {
        ++pongs_;
      } else {
        ++bad_frames_;
      }
      pos += 4 + length;
    }
    c.rx.erase(0, pos);
    // Written in 5-byte pieces (Nagle off, so each is its own segment): the
    // client's reader meets frames split inside the header and the payload.
    for (std::size_t off = 0; off < out.size(); off += 5) {
      uv_buf_t b = uv_buf_init(out.data() + off,
                               static_cast<unsigned>(std::min<std::size_t>(5, out.size() - off)));
      if (uv_try_write(reinterpret_cast<uv_stream_t*>(&c.tcp), &b, 1) < 0) break;
    }
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
  Protocol protocol_;
  uv_loop_t loop_{};
  std::optional<LoopWheel> wheel_;
  uv_tcp_t listener_{};
  uv_async_t stop_{};
  std::thread thread_;
  int port_ = 0;
  std::atomic<std::uint64_t> accepted_{0}, idle_closed_{0}, pongs_{0}, bad_frames_{0};
};

}  // namespace heartwheel::test
