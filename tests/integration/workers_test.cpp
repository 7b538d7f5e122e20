// Several loops share one port (SO_REUSEPORT), each with its own wheel: as
// threads in-process, and as processes through the heartwheel-echo binary.
#include <heartwheel/runtime/workers.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "net_test_support.h"

using namespace hwtest;
namespace runtime = heartwheel::runtime;
using net::CloseReason;

namespace {

struct Echo : net::Handler {
  void on_data(net::Connection& c, std::string_view d) override { c.write(d); }
};

#ifdef HEARTWHEEL_ECHO_BIN
// Whether the server closed `fd` (end of stream or reset), without waiting.
bool closed_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) != 1) return false;
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// Times the threads of `pid` blocked and woke up again (voluntary context
// switches): each is one epoll_wait that returned, with or without work.
long wakeups(pid_t pid) {
  long sum = 0;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(task.path() / "status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) sum += std::stol(line.substr(24));
  }
  return sum;
}
#endif

}  // namespace

TEST_CASE("Worker threads share one port, each with its own wheel", "[net][workers]") {
  runtime::WorkersOptions o;
  o.threads = 2;
  o.server.connection.idle.read_idle = 200ms;
  o.wheel.tick = 5ms;
  o.publish_interval = 20ms;
  runtime::Workers workers(o, [](unsigned) { return std::make_unique<Echo>(); });
  workers.start();
  REQUIRE(workers.port() > 0);
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) fds.push_back(connect_blocking(workers.port()));
  for (int fd : fds) CHECK(echo_once(fd));
  for (int fd : fds) CHECK(wait_closed(fd));  // read idle, in whichever worker holds it
  // Published every 20 ms: the first publish that shows every close.
  REQUIRE(eventually([&] { return workers.total().net.closed(CloseReason::read_idle) == 40; }));
  const auto snaps = workers.snapshots();
  REQUIRE(snaps.size() == 2);
  for (const auto& s : snaps) {
    // 40 connections over 2 listeners: each gets some (fails with odds 2^-39).
    CHECK(s.net.accepted > 0);
    CHECK(s.wheel.fired > 0);  // its own wheel closed its own connections
  }
  const auto total = workers.total();
  CHECK(total.net.accepted == 40);
  CHECK(total.net.closed(CloseReason::read_idle) == 40);
  CHECK(total.loops == 2);
  workers.drain(1s);
  workers.join();
  CHECK_FALSE(workers.running());
  for (int fd : fds) ::close(fd);
}

TEST_CASE("Draining workers end their loops and their final statistics survive the join",
          "[net][workers][drain]") {
  runtime::WorkersOptions o;
  o.threads = 2;
  runtime::Workers workers(o, [](unsigned) { return std::make_unique<Echo>(); });
  workers.start();
  std::vector<int> fds;
  for (int i = 0; i < 10; ++i) fds.push_back(connect_blocking(workers.port()));
  for (int fd : fds) CHECK(echo_once(fd));
  workers.drain(2s);
  workers.join();
  for (int fd : fds) CHECK(wait_closed(fd));
  CHECK(workers.total().net.closed(CloseReason::drain) == 10);
  for (int fd : fds) ::close(fd);
}

TEST_CASE("A loop handler factory gets its worker's wheel and on_finish lets the loop end",
          "[net][workers][drain]") {
  // A handler that keeps its loop alive with a timer of its own (as a Redis
  // link does) until on_finish closes it: without the hook, join() would
  // wait forever.
  struct Keeper : Echo {
    explicit Keeper(heartwheel::LoopWheel& w) : wheel(w) {
      uv_timer_init(w.loop(), &timer);
      uv_timer_start(
          &timer, [](uv_timer_t*) {}, 1000000, 0);
    }
    void finish() { uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr); }
    heartwheel::LoopWheel& wheel;
    uv_timer_t timer;
  };
  std::atomic<int> made{0}, finished{0};
  runtime::WorkersOptions o;
  o.threads = 2;
  o.on_finish = [&](unsigned, net::Handler& h) {
    static_cast<Keeper&>(h).finish();
    ++finished;
  };
  runtime::Workers workers(o, [&](unsigned, heartwheel::LoopWheel& wheel) {
    ++made;
    return std::make_unique<Keeper>(wheel);
  });
  workers.start();
  CHECK(made == 2);
  const int fd = connect_blocking(workers.port());
  CHECK(echo_once(fd));
  workers.drain(2s);
  workers.join();  // returns: every loop ended
  CHECK(finished == 2);
  ::close(fd);
}

TEST_CASE("A worker that cannot listen fails start() cleanly", "[net][workers]") {
  runtime::WorkersOptions first;
  first.threads = 1;  // no SO_REUSEPORT: holds the port exclusively
  runtime::Workers holder(first, [](unsigned) { return std::make_unique<Echo>(); });
  holder.start();
  runtime::WorkersOptions second;
  second.threads = 2;
  second.server.port = holder.port();
  runtime::Workers late(second, [](unsigned) { return std::make_unique<Echo>(); });
  CHECK_THROWS_AS(late.start(), std::system_error);
  CHECK_FALSE(late.running());
  holder.stop();
  holder.join();
}

#ifdef HEARTWHEEL_ECHO_BIN
TEST_CASE("heartwheel-echo with several processes shares one port and merges statistics",
          "[net][workers][process]") {
  EchoProcess echo({"--processes", "2", "--workers", "2", "--read-idle", "300ms", "--tick", "5ms"});
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) fds.push_back(connect_blocking(echo.port));
  for (int fd : fds) CHECK(echo_once(fd));
  for (int fd : fds) CHECK(wait_closed(fd));
  CHECK(echo.stop(SIGTERM) == 0);
  CHECK(echo.quiet_since_ready());  // "listening on" was printed once
  const std::string s = echo.stats();
  CHECK(s.find("\"connections_accepted\": 40") != std::string::npos);
  CHECK(s.find("\"read_idle\": 40") != std::string::npos);
  CHECK(s.find("\"loops\": 4") != std::string::npos);
  for (const char* reason : {"write_idle", "all_idle", "request_timeout", "max_age", "peer_closed",
                             "error", "limit", "write_stall", "drain"})
    CHECK(s.find(std::string("\"") + reason + "\"") != std::string::npos);
  for (int fd : fds) ::close(fd);
}

TEST_CASE("A quiet heartwheel-echo does not wake up to poll while it serves",
          "[net][workers][process]") {
  // With one connection 45 s from its deadline the wheel sleeps; what is left
  // is the statistics publish (every 500 ms) and the echo below: a handful of
  // wake-ups in 2 s. The main thread used to poll every 20 ms for the end of
  // a drain, 100 wake-ups in 2 s.
  EchoProcess echo({"--read-idle", "45s", "--tick", "100ms"});
  const int fd = connect_blocking(echo.port);
  CHECK(echo_once(fd));
  const long before = wakeups(echo.pid);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK(echo_once(fd));  // wakes the worker at least once: the count is live
  const long woke = wakeups(echo.pid) - before;
  CHECK(woke >= 1);
  CHECK(woke <= 30);
  ::close(fd);
  CHECK(echo.stop(SIGTERM) == 0);  // the drain still ends the process
}

TEST_CASE("The prefork parent restarts a worker process that dies while serving",
          "[net][workers][process]") {
  EchoProcess echo({"--processes", "2"});
  auto children = [&] {
    std::vector<pid_t> pids;
    std::ifstream in("/proc/" + std::to_string(echo.pid) + "/task/" + std::to_string(echo.pid) +
                     "/children");
    for (pid_t p; in >> p;) pids.push_back(p);
    return pids;
  };
  const auto before = children();
  REQUIRE(before.size() == 2);
  ::kill(before[0], SIGKILL);
  std::vector<pid_t> after;
  for (int i = 0; i < 200; ++i) {
    after = children();
    if (after.size() == 2 && after != before) break;
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(after.size() == 2);
  CHECK(std::find(after.begin(), after.end(), before[0]) == after.end());
  // The new child listens: two SO_REUSEPORT listeners on the port again.
  REQUIRE(eventually([&] { return listen_state(echo.port).listeners == 2; }));
  for (int i = 0; i < 20; ++i) {
    const int fd = connect_blocking(echo.port);
    CHECK(echo_once(fd));
    ::close(fd);
  }
  CHECK(echo.stop(SIGTERM) == 0);
  const std::string s = echo.stats();
  CHECK(s.find("\"process_restarts\": 1") != std::string::npos);
  CHECK(s.find("\"loops\": 2") != std::string::npos);  // the new process reported too
}

TEST_CASE("Out of descriptors, the server sheds connections without spinning and recovers",
          "[net][limits][process]") {
  EchoProcess echo({"--read-idle", "0"}, 48);
  std::vector<int> fds;
  for (int i = 0; i < 80; ++i) fds.push_back(connect_blocking(echo.port));
  // 48 descriptors hold fewer than 48 connections: at least 32 of the 80 are
  // shed. Once they have been, the server has met the flood.
  REQUIRE(eventually([&] { return std::count_if(fds.begin(), fds.end(), closed_now) >= 32; }));
  const Duration cpu_before = echo.cpu_time();
  std::this_thread::sleep_for(500ms);
  // A busy loop would burn ~500 ms of CPU here.
  CHECK(echo.cpu_time() - cpu_before < 150ms);
  int served = 0;
  for (int fd : fds) served += echo_once(fd);
  CHECK(served > 0);
  CHECK(served < 80);
  for (int fd : fds) ::close(fd);
  // Descriptors come back as the server reads the closes: a new client is
  // served (one that comes too early is shed like the others).
  CHECK(eventually(
      [&] {
        const int again = connect_blocking(echo.port);
        const bool echoed = echo_once(again);
        ::close(again);
        return echoed;
      },
      5s, 20ms));
  CHECK(echo.stop(SIGTERM) == 0);
  // libuv's reserve-descriptor trick sheds silently: the shed peers were
  // never accepted by the server, they just saw their connection closed.
  const std::string s = echo.stats();
  INFO(s);
  CHECK(s.find("\"connections_accepted\": 80") == std::string::npos);
}
#endif
