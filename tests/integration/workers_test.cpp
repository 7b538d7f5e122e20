// Several loops share one port (SO_REUSEPORT), each with its own wheel: as
// threads in-process, and as processes through the heartwheel-echo binary.
#include <heartwheel/net/workers.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net_test_support.h"

using namespace hwtest;
using net::CloseReason;

namespace {

struct Echo : net::Handler {
  void on_data(net::Connection& c, std::string_view d) override { c.write(d); }
};

bool echo_once(int fd) {
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
bool wait_closed(int fd) {
  char buf[64];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

}  // namespace

TEST_CASE("Worker threads share one port, each with its own wheel", "[net][workers]") {
  net::WorkersOptions o;
  o.threads = 2;
  o.server.connection.idle.read_idle = 200ms;
  o.wheel.tick = 5ms;
  o.publish_interval = 20ms;
  net::Workers workers(o, [](unsigned) { return std::make_unique<Echo>(); });
  workers.start();
  REQUIRE(workers.port() > 0);
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) fds.push_back(connect_blocking(workers.port()));
  for (int fd : fds) CHECK(echo_once(fd));
  for (int fd : fds) CHECK(wait_closed(fd));  // read idle, in whichever worker holds it
  std::this_thread::sleep_for(100ms);          // one more publish
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

TEST_CASE("Draining workers end their loops; final statistics survive the join", "[net][workers][drain]") {
  net::WorkersOptions o;
  o.threads = 2;
  net::Workers workers(o, [](unsigned) { return std::make_unique<Echo>(); });
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

#ifdef HEARTWHEEL_ECHO_BIN
TEST_CASE("heartwheel-echo with several processes shares one port and merges statistics",
          "[net][workers][process]") {
  char stats_path[] = "/tmp/heartwheel-echo-stats-XXXXXX";
  const int tmp = ::mkstemp(stats_path);
  REQUIRE(tmp >= 0);
  ::close(tmp);
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::execl(HEARTWHEEL_ECHO_BIN, HEARTWHEEL_ECHO_BIN, "--listen", "127.0.0.1:0", "--processes", "2",
            "--workers", "2", "--read-idle", "300ms", "--tick", "5ms", "--stats-json", stats_path,
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  FILE* f = ::fdopen(out[0], "r");
  char line[256] = {};
  REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  int port = 0;
  REQUIRE(std::sscanf(line, "listening on 127.0.0.1:%d", &port) == 1);
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) fds.push_back(connect_blocking(port));
  for (int fd : fds) CHECK(echo_once(fd));
  for (int fd : fds) CHECK(wait_closed(fd));
  ::kill(pid, SIGTERM);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  char rest[256];
  CHECK(std::fgets(rest, sizeof rest, f) == nullptr);  // "listening on" was printed once
  std::fclose(f);
  std::ifstream in(stats_path);
  std::stringstream json;
  json << in.rdbuf();
  const std::string s = json.str();
  CHECK(s.find("\"connections_accepted\": 40") != std::string::npos);
  CHECK(s.find("\"read_idle\": 40") != std::string::npos);
  CHECK(s.find("\"loops\": 4") != std::string::npos);
  for (const char* reason : {"write_idle", "all_idle", "request_timeout", "max_age", "peer_closed",
                             "error", "limit", "write_stall", "drain"})
    CHECK(s.find(std::string("\"") + reason + "\"") != std::string::npos);
  for (int fd : fds) ::close(fd);
  ::unlink(stats_path);
}
#endif
