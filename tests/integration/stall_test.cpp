// Stall-aware expiry: a loop blocked past the idle timeout, while peers kept
// sending, must not close them: their bytes are read (and stamped with the
// post-poll time) before the wheel expires anything in the check phase.
#include <heartwheel/net/server.h>

#include <atomic>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_test_support.h"

using namespace hwtest;
using net::CloseReason;

namespace {
constexpr Duration kIdle = 200ms;

}  // namespace

TEST_CASE("A loop blocked past the idle timeout does not close peers that kept sending",
          "[net][idle][stall]") {
  const auto refresh = GENERATE(net::RefreshMode::lazy, net::RefreshMode::eager);
  TestLoop t(10ms);
  Recorder rec;
  rec.echo = false;
  // Blocking inside an I/O callback is the hard case: libuv's own timers
  // would run at the start of the next iteration, before the waiting bytes
  // are read (the uv_timer baseline fails this test, see README.md).
  rec.data_hook = [](net::Connection&, std::string_view data) {
    if (data == "B") std::this_thread::sleep_for(3 * kIdle);
  };
  net::ServerOptions o;
  o.connection.idle = {.read_idle = kIdle, .refresh = refresh};
  net::Server server(*t.wheel, rec, o);
  REQUIRE_FALSE(server.listen());

  constexpr int kSenders = 50;
  std::vector<int> senders;
  for (int i = 0; i < kSenders; ++i) senders.push_back(connect_blocking(server.port()));
  const int silent = connect_blocking(server.port());  // the control: truly idle
  const int blocker = connect_blocking(server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == kSenders + 2; }));

  // Peers send every 40 ms from another thread, loop or no loop.
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    while (!stop) {
      for (int fd : senders) [[maybe_unused]] auto n = ::write(fd, "x", 1);
      std::this_thread::sleep_for(40ms);
    }
  });
  t.run_for(100ms);
  // Block the loop for three idle timeouts inside a read callback.
  REQUIRE(::write(blocker, "B", 1) == 1);
  t.run_for(300ms);
  REQUIRE(t.run_until([&] { return rec.closed >= 2; }));
  t.run_for(100ms);
  stop = true;
  sender.join();

  // Only the two that really sent nothing for 3 timeouts: the silent control
  // and the blocker itself (its one byte came before the block).
  CHECK(rec.closed == 2);
  CHECK(server.stats().closed(CloseReason::read_idle) == 2);
  CHECK(server.connection_count() == kSenders);
  for (int fd : senders) ::close(fd);
  ::close(silent);
  ::close(blocker);
}
