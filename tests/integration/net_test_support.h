// Shared helpers for the loopback tests: a loop with its wheel and a watchdog,
// raw libuv clients, and a recording handler.
#pragma once

#include <heartwheel/timer/loop_wheel.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <heartwheel/net/connection.h>
#include <heartwheel/net/handler.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eventually.h"

namespace hwtest {

using namespace std::chrono_literals;
using heartwheel::Duration;
namespace net = heartwheel::net;

inline Duration hr_now() { return Duration(uv_hrtime()); }

// A blocking client socket off the loop (connect completes from the backlog,
// before the server accepts). Reads time out after 5 s, so tests never hang.
inline int connect_blocking(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// The listening sockets on loopback `port` (one per SO_REUSEPORT listener)
// and the connections waiting in their accept queues, as the kernel reports
// them in /proc/net/tcp (a listening socket's rx_queue column is its accept
// queue). For tests that wait until the kernel holds what they set up.
struct ListenState {
  int listeners = 0;
  long waiting = 0;
};
inline ListenState listen_state(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the column names
  ListenState state;
  while (std::getline(in, line)) {
    // "  0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 ..."
    std::istringstream fields(line);
    std::string slot, local, remote, st, queues;
    fields >> slot >> local >> remote >> st >> queues;
    if (st != "0A" || std::stoi(local.substr(local.find(':') + 1), nullptr, 16) != port) continue;
    ++state.listeners;
    state.waiting += std::stol(queues.substr(queues.find(':') + 1), nullptr, 16);
  }
  return state;
}

// Writes "ping" on a blocking client socket and reads it back: true if echoed.
inline bool echo_once(int fd) {
  if (::write(fd, "ping", 4) != 4) return false;
  char buf[8];
  std::size_t got = 0;
  while (got < 4) {
    const ssize_t n = ::read(fd, buf + got, sizeof buf - got);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return std::string(buf, 4) == "ping";
}

// Reads until EOF (the server closed): true if it did within the receive timeout.
inline bool wait_closed(int fd) {
  char buf[64];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

// A loop plus its wheel. run_until() never hangs: it gives up at `limit`.
struct TestLoop {
  explicit TestLoop(Duration tick = 5ms, std::size_t max_fired = 20000) {
    REQUIRE(uv_loop_init(&loop) == 0);
    wheel = std::make_unique<heartwheel::LoopWheel>(
        &loop, heartwheel::LoopWheel::Options{.tick = tick, .max_fired_per_iteration = max_fired});
  }
  ~TestLoop() {
    wheel.reset();
    uv_run(&loop, UV_RUN_DEFAULT);  // closing handles finish
    uv_walk(
        &loop,
        [](uv_handle_t* h, void*) {
          if (!uv_is_closing(h)) uv_close(h, nullptr);
        },
        nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  // Runs the loop until pred() holds or `limit` passed. Returns pred().
  bool run_until(const std::function<bool()>& pred, Duration limit = 10s) {
    const Duration end = hr_now() + limit;
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 2, 2);  // wake up to re-check pred
    while (!pred() && hr_now() < end) uv_run(&loop, UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
    return pred();
  }
  // Runs the loop for `d` (or until nothing is left to do).
  void run_for(Duration d) {
    run_until([] { return false; }, d);
  }
  uv_loop_t loop;
  std::unique_ptr<heartwheel::LoopWheel> wheel;
};

// A plain client socket on the loop: connects, sends, records what comes back
// and when the server closed it.
struct RawClient {
  // `source`: the local address to connect from (another loopback address,
  // e.g. "127.0.0.2"); nullptr lets the kernel choose.
  explicit RawClient(uv_loop_t* loop, int port, const char* source = nullptr) {
    tcp = new uv_tcp_t;
    uv_tcp_init(loop, tcp);
    tcp->data = this;
    if (source) {
      sockaddr_in from;
      uv_ip4_addr(source, 0, &from);
      REQUIRE(uv_tcp_bind(tcp, reinterpret_cast<const sockaddr*>(&from), 0) == 0);
    }
    sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    auto* req = new uv_connect_t;
    REQUIRE(uv_tcp_connect(req, tcp, reinterpret_cast<const sockaddr*>(&addr),
                           [](uv_connect_t* r, int status) {
                             auto* self =
                                 static_cast<RawClient*>(r->handle->data);  // null once destroyed
                             delete r;
                             if (!self) return;
                             if (status < 0) {
                               self->closed = true;
                               self->error = status;
                               return;
                             }
                             self->connected = true;
                             uv_read_start(
                                 reinterpret_cast<uv_stream_t*>(self->tcp),
                                 [](uv_handle_t*, size_t, uv_buf_t* b) {
                                   static char buf[65536];
                                   *b = uv_buf_init(buf, sizeof buf);
                                 },
                                 [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
                                   auto* c = static_cast<RawClient*>(s->data);
                                   if (n > 0) {
                                     if (c->reading)
                                       c->received.append(b->base, static_cast<size_t>(n));
                                     c->bytes_received += static_cast<size_t>(n);
                                   } else if (n < 0) {
                                     c->closed = true;
                                     c->closed_at = hr_now();
                                     c->error = static_cast<int>(n);
                                     uv_read_stop(s);
                                   }
                                 });
                           }) == 0);
  }
  ~RawClient() {
    tcp->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(tcp),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(const std::string& data) {
    auto* req = new uv_write_t;
    auto* copy = new std::string(data);
    req->data = copy;
    uv_buf_t buf = uv_buf_init(copy->data(), static_cast<unsigned>(copy->size()));
    uv_write(req, reinterpret_cast<uv_stream_t*>(tcp), &buf, 1, [](uv_write_t* r, int) {
      delete static_cast<std::string*>(r->data);
      delete r;
    });
  }
  // Stop reading from the socket (a slow reader): the kernel buffers fill up.
  void stop_reading() { uv_read_stop(reinterpret_cast<uv_stream_t*>(tcp)); }
  void shutdown_write() {
    auto* req = new uv_shutdown_t;
    uv_shutdown(req, reinterpret_cast<uv_stream_t*>(tcp), [](uv_shutdown_t* r, int) { delete r; });
  }

  uv_tcp_t* tcp;
  bool connected = false;
  bool closed = false;
  bool reading = true;
  int error = 0;
  Duration closed_at{};
  std::string received;
  std::size_t bytes_received = 0;
};

// Records every server-side event, per connection id.
struct Recorder : net::Handler {
  struct Entry {
    Duration opened_at{};
    Duration closed_at{};
    bool closed = false;
    net::CloseReason reason = net::CloseReason::local;
    std::vector<net::DeadlineEvent> idle;
  };
  void on_open(net::Connection& c) override {
    auto& e = conns[c.id()];
    // The connection's own open stamp, what its idle anchors start from
    // (rounded up to the wheel's tick: never earlier than the truth). Later
    // hr_now() readings are compared against it, so "never early" is checked
    // against the server's own clock, not against callback latency. Not the
    // clock read here: the process may be preempted between the stamp and
    // this call (on a loaded machine 27 and 50 ms were seen, and a
    // connection then looked closed 50 ms early).
    e.opened_at = c.opened_at().time_since_epoch();
    if (open_hook) open_hook(c);
  }
  void on_data(net::Connection& c, std::string_view data) override {
    if (data_hook) {
      data_hook(c, data);
    } else if (echo) {
      c.write(data);
    }
  }
  net::DeadlineAction on_deadline(net::Connection& c, net::DeadlineEvent ev) override {
    conns[c.id()].idle.push_back(ev);
    return deadline_hook ? deadline_hook(c, ev) : net::DeadlineAction::close;
  }
  void on_close(net::Connection& c, net::CloseReason r, std::error_code) override {
    auto& e = conns[c.id()];
    e.closed = true;
    e.closed_at = hr_now();
    e.reason = r;
    ++closed;
    if (close_hook) close_hook(c, r);
  }
  std::size_t count_closed(net::CloseReason r) const {
    std::size_t n = 0;
    for (auto& [id, e] : conns) n += e.closed && e.reason == r;
    return n;
  }
  std::map<std::uint64_t, Entry> conns;
  std::size_t closed = 0;
  bool echo = true;
  std::function<void(net::Connection&)> open_hook;
  std::function<void(net::Connection&, std::string_view)> data_hook;
  std::function<net::DeadlineAction(net::Connection&, net::DeadlineEvent)> deadline_hook;
  std::function<void(net::Connection&, net::CloseReason)> close_hook;
};

#ifdef HEARTWHEEL_ECHO_BIN
// The heartwheel-echo binary as a child process: started with arguments,
// reads back the port from its one "listening on" line, stopped by signal.
struct EchoProcess {
  // `fd_limit` > 0 lowers RLIMIT_NOFILE in the child before exec.
  explicit EchoProcess(std::vector<std::string> args, rlim_t fd_limit = 0) {
    char path[] = "/tmp/heartwheel-echo-stats-XXXXXX";
    const int tmp = ::mkstemp(path);
    REQUIRE(tmp >= 0);
    ::close(tmp);
    stats_path = path;
    args.insert(args.begin(),
                {HEARTWHEEL_ECHO_BIN, "--listen", "127.0.0.1:0", "--stats-json", stats_path});
    int out[2];
    REQUIRE(::pipe(out) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      if (fd_limit > 0) {
        rlimit rl{fd_limit, fd_limit};
        ::setrlimit(RLIMIT_NOFILE, &rl);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(HEARTWHEEL_ECHO_BIN, argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    out_ = ::fdopen(out[0], "r");
    char line[256] = {};
    REQUIRE(std::fgets(line, sizeof line, out_) != nullptr);
    REQUIRE(std::sscanf(line, "listening on 127.0.0.1:%d", &port) == 1);
  }
  ~EchoProcess() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out_) std::fclose(out_);
    ::unlink(stats_path.c_str());
  }
  // Sends `sig`, waits, returns the exit status (-1 if killed by a signal).
  int stop(int sig = SIGTERM) {
    ::kill(pid, sig);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // True if the child printed nothing after its first line.
  bool quiet_since_ready() { return std::fgetc(out_) == EOF; }
  std::string stats() const {
    std::ifstream in(stats_path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // CPU time (user + system) the child used so far.
  Duration cpu_time() const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(all.substr(all.rfind(')') + 2));
    std::string f;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i) {
      if (i == 14) utime = std::stol(f);
      if (i == 15) stime = std::stol(f);
    }
    return std::chrono::milliseconds((utime + stime) * 1000 / ::sysconf(_SC_CLK_TCK));
  }
  pid_t pid = -1;
  int port = 0;
  std::string stats_path;
  FILE* out_ = nullptr;
};
#endif

}  // namespace hwtest
