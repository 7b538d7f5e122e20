// A frozen server process (SIGSTOP ... SIGCONT, as a VM pause, a container
// freeze or heavy swapping would do) past its read-idle timeout, while the
// clients keep sending: on resume no chatty connection may be closed, and
// the silent ones still are. Runs the real heartwheel-echo
// (HEARTWHEEL_ECHO_BIN) with lazy and eager refresh, one and two workers.
//
// Before the fix every connection was closed: libuv returns from a poll
// interrupted by the freeze without collecting events once its timeout has
// run out, and the wheel then expired at the time after the freeze with the
// chatty peers' bytes still unread in the kernel.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

#include "process_support.h"

using namespace std::chrono_literals;

namespace {

int connect_nonblocking(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// Reads what is there; true if the server closed the connection.
bool closed_by_server(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) continue;
    if (n == 0) return true;
    return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

}  // namespace

TEST_CASE("A server frozen past its idle timeout keeps the peers that kept sending",
          "[integration][stall][freeze]") {
  const std::string refresh = GENERATE("lazy", "eager");
  const std::string workers = GENERATE("1", "2");
  INFO("refresh " << refresh << ", workers " << workers);
  hwproc::Watchdog watchdog(60s);
  hwproc::Child server({HEARTWHEEL_ECHO_BIN, "--listen", "127.0.0.1:0", "--read-idle", "1500ms",
                        "--tick", "10ms", "--refresh", refresh, "--workers", workers});
  const int port = server.wait_listening(10s);
  REQUIRE(port > 0);

  constexpr int kChatty = 200;
  constexpr int kSilent = 20;
  std::vector<int> chatty, silent;
  for (int i = 0; i < kChatty; ++i) chatty.push_back(connect_nonblocking(port));
  for (int i = 0; i < kSilent; ++i) silent.push_back(connect_nonblocking(port));
  for (int fd : silent) REQUIRE(::send(fd, "x", 1, MSG_NOSIGNAL) == 1);

  // The peers send every 100 ms whatever the server does.
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    while (!stop) {
      for (int fd : chatty) [[maybe_unused]] auto n = ::send(fd, "x", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(100ms);
    }
  });
  hwproc::sleep_for(700ms);
  server.signal(SIGSTOP);
  hwproc::sleep_for(2500ms);  // longer than the idle timeout
  server.signal(SIGCONT);
  hwproc::sleep_for(1200ms);
  stop = true;
  sender.join();

  int chatty_closed = 0, silent_closed = 0;
  for (int fd : chatty) chatty_closed += closed_by_server(fd);
  for (int fd : silent) silent_closed += closed_by_server(fd);
  CHECK(chatty_closed == 0);
  CHECK(silent_closed == kSilent);

  // The chatty ones are still served after the freeze.
  for (int fd : chatty) REQUIRE(::send(fd, "y", 1, MSG_NOSIGNAL) == 1);
  hwproc::sleep_for(300ms);
  CHECK(closed_by_server(chatty.front()) == false);
  for (int fd : chatty) ::close(fd);
  for (int fd : silent) ::close(fd);
  server.signal(SIGTERM);
  CHECK(server.wait_exit(15s).has_value());
}
