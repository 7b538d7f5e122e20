// A peer that stops reading: writability callbacks, the slow-reader pause,
// the stall timeout, the minimum write rate, and counted drops.
#include <heartwheel/common/error.h>
#include <heartwheel/net/server.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_test_support.h"

using namespace hwtest;
using net::CloseReason;

namespace {

// Writes a stream of bytes as long as the connection is writable, like a
// well-behaved producer.
struct Producer : Recorder {
  std::size_t chunk = 64 * 1024;
  std::size_t produced = 0;
  std::size_t unwritable = 0, writable_again = 0;
  void pump(net::Connection& c) {
    const std::string block(chunk, 'x');
    while (c.writable() && !c.closing() && produced < (std::size_t{256} << 20)) {
      if (c.write(block)) break;
      produced += block.size();
    }
  }
  void on_writable(net::Connection& c, bool w) override {
    if (w) {
      ++writable_again;
      pump(c);
    } else {
      ++unwritable;
    }
  }
};

net::ServerOptions slow_reader_options(net::SlowReaderPolicy policy, Duration stall) {
  net::ServerOptions o;
  o.connection.write.high_watermark = 256 * 1024;
  o.connection.write.low_watermark = 64 * 1024;
  o.connection.write.max_queued_bytes = 1024 * 1024;
  o.connection.write.slow_reader = policy;
  o.connection.write.stall_timeout = stall;
  return o;
}

}  // namespace

TEST_CASE(
    "A reader that stops is paused, then closed as write_stall, its queued bytes dropped",
    "[net][write]") {
  TestLoop t(5ms);
  Producer p;
  p.open_hook = [&](net::Connection& c) { p.pump(c); };
  net::Server server(*t.wheel, p, slow_reader_options(net::SlowReaderPolicy::pause_reading, 300ms));
  REQUIRE_FALSE(server.listen());
  const int fd = connect_blocking(server.port());  // never reads
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  REQUIRE(t.run_until([&] { return p.closed == 1; }, 10s));
  const auto& s = server.stats();
  CHECK(p.unwritable >= 1);
  CHECK(s.unwritable_events >= 1);
  CHECK(s.read_pauses >= 1);
  CHECK(s.closed(CloseReason::write_stall) == 1);
  CHECK(s.bytes_dropped > 0);
  // Every byte produced was either written to the socket or counted as dropped.
  CHECK(s.bytes_written + s.bytes_dropped == p.produced);
  ::close(fd);
}

TEST_CASE("A reader that catches up makes the connection writable again", "[net][write]") {
  TestLoop t(5ms);
  Producer p;
  net::Connection* conn = nullptr;
  p.open_hook = [&](net::Connection& c) {
    conn = &c;
    p.pump(c);
  };
  net::Server server(*t.wheel, p, slow_reader_options(net::SlowReaderPolicy::pause_reading, 5s));
  REQUIRE_FALSE(server.listen());
  const int fd = connect_blocking(server.port());
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  REQUIRE(t.run_until([&] { return p.unwritable >= 1; }));
  // Read everything for a while: the producer gets on_writable(true) and goes on.
  std::vector<char> buf(1 << 20);
  std::size_t got = 0;
  const Duration start = hr_now();
  while (p.writable_again < 2 && hr_now() - start < 10s) {
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) got += static_cast<std::size_t>(n);
    t.run_for(5ms);
  }
  CHECK(p.writable_again >= 2);
  CHECK(got > 0);
  CHECK(p.closed == 0);
  CHECK(server.stats().bytes_dropped == 0);
  ::close(fd);
}

TEST_CASE("Writes past the queue cap are refused with limit_reached and counted", "[net][write]") {
  TestLoop t(5ms);
  Recorder rec;
  std::error_code last;
  std::size_t refused = 0;
  rec.open_hook = [&](net::Connection& c) {
    const std::string block(256 * 1024, 'y');
    for (int i = 0; i < 200; ++i) {  // 50 MiB at once, ignoring writability
      if (auto ec = c.write(block)) {
        last = ec;
        refused += block.size();
      }
    }
  };
  net::Server server(*t.wheel, rec, slow_reader_options(net::SlowReaderPolicy::close, 0ms));
  REQUIRE_FALSE(server.listen());
  const int fd = connect_blocking(server.port());
  REQUIRE(t.run_until([&] { return refused > 0; }));
  CHECK(last == heartwheel::errc::limit_reached);
  CHECK(server.stats().bytes_dropped == refused);
  ::close(fd);
}

TEST_CASE("A reader that takes a trickle is closed by the minimum write rate", "[net][write]") {
  TestLoop t(5ms);
  Producer p;
  p.open_hook = [&](net::Connection& c) { p.pump(c); };
  net::ServerOptions o = slow_reader_options(net::SlowReaderPolicy::pause_reading, 0ms);
  o.connection.write.min_write_rate = 1'000'000;  // 1 MB/s
  o.connection.write.rate_window = 200ms;
  net::Server server(*t.wheel, p, o);
  REQUIRE_FALSE(server.listen());
  const int fd = connect_blocking(server.port());
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  // The client reads 100 bytes every 10 ms: 10 kB/s, always making progress,
  // so the stall timeout (off here) would never catch it.
  char buf[100];
  const Duration start = hr_now();
  while (p.closed == 0 && hr_now() - start < 15s) {
    [[maybe_unused]] auto n = ::read(fd, buf, sizeof buf);
    t.run_for(10ms);
  }
  CHECK(server.stats().closed(CloseReason::write_stall) == 1);
  ::close(fd);
}
