// The edge-triggered read path (lib/src/net/edge_reader.h) checked: one
// reader per loop shared by servers and clients, the bound of 32 reads a
// turn and the re-arm after it, a later connection of the same batch closed
// by an earlier one's callback, and the fallback to libuv's reads. The cases
// that are about reading itself run in both modes (edge_triggered_reads true
// and false).
#include "edge_reader.h"  // lib/src/net (private)

#include <heartwheel/net/connector.h>
#include <heartwheel/net/server.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include "net_test_support.h"

using namespace hwtest;
using heartwheel::net::detail::EdgeReader;
using net::CloseReason;

namespace {

int server_fd(net::Connection& c) {
  uv_os_fd_t fd;
  REQUIRE(uv_fileno(reinterpret_cast<uv_handle_t*>(c.handle()), &fd) == 0);
  return fd;
}

struct Client : net::Handler {
  void on_data(net::Connection&, std::string_view d) override { received.append(d); }
  net::DeadlineAction on_deadline(net::Connection&, net::DeadlineEvent) override {
    return net::DeadlineAction::close;
  }
  void on_close(net::Connection&, CloseReason, std::error_code) override {}
  std::string received;
};

// Under HEARTWHEEL_EDGE_READS=0 (the test command's level-triggered pass)
// no connection reads through an edge reader: the cases about the reader
// itself then check that there is none.
bool edge_reads() { return EdgeReader::edge_reads_enabled(); }

constexpr std::size_t kRead = 64 * 1024;  // the loop's read buffer: a full read

}  // namespace

TEST_CASE("The servers and clients of one loop share one edge reader", "[net][edge]") {
  TestLoop t(5ms);
  Recorder rec_a, rec_b;
  net::Server a(*t.wheel, rec_a, net::ServerOptions{});
  net::Server b(*t.wheel, rec_b, net::ServerOptions{});
  REQUIRE_FALSE(a.listen());
  REQUIRE_FALSE(b.listen());
  Client client_rec;
  net::ConnectorOptions co;
  co.port = a.port();
  net::Connector client(*t.wheel, client_rec, co);
  client.start();
  const int raw = connect_blocking(b.port());
  REQUIRE(t.run_until([&] {
    return client.connected() && a.connection_count() == 1 && b.connection_count() == 1;
  }));
  // The connector's connection and both servers' accepted ones: one set.
  EdgeReader* reader = EdgeReader::find(&t.loop);
  if (edge_reads()) {
    REQUIRE(reader != nullptr);
    CHECK(reader->members() == 3);
  } else {
    CHECK(reader == nullptr);
  }
  client.connection()->write("ping");
  REQUIRE(t.run_until([&] { return client_rec.received == "ping"; }));
  client.stop();
  ::close(raw);
  REQUIRE(t.run_until([&] { return a.connection_count() == 0 && b.connection_count() == 0; }));
  // The last member gone, the listening servers keep the reader for their
  // next connections (not made and closed per connection)...
  if (edge_reads()) {
    REQUIRE(EdgeReader::find(&t.loop) == reader);
    CHECK(reader->members() == 0);
    const int again = connect_blocking(a.port());
    REQUIRE(t.run_until([&] { return a.connection_count() == 1; }));
    CHECK(EdgeReader::find(&t.loop) == reader);
    CHECK(reader->members() == 1);
    ::close(again);
    REQUIRE(t.run_until([&] { return a.connection_count() == 0; }));
  }
  a.stop_listening();
  CHECK(EdgeReader::find(&t.loop) == reader);  // b still listens
  b.stop_listening();
  // ...until the last stops listening: nothing of ours keeps the loop.
  CHECK(EdgeReader::find(&t.loop) == nullptr);
}

TEST_CASE("A connection reads at most 32 times a turn and the rest in later turns",
          "[net][edge][turns]") {
  const bool edge = GENERATE(true, false);
  CAPTURE(edge);
  TestLoop t(5ms);
  Recorder rec;
  rec.echo = false;
  constexpr std::size_t kTotal = 32 * kRead + 100 * 1024;
  std::size_t got = 0;
  std::size_t reads_this_turn = 0;
  int fd = -1;
  // Before the first turn and between reads the socket holds a full read
  // (the writer thread keeps writing), so every read of the first turn is
  // full; before its 32nd, everything the writer sends has arrived. The turn
  // stops at 32 with 100 KiB left; the rest is read in later turns. This
  // checks the bound in both modes, not the edge reader's re-arm: data that
  // arrived during the turn's first reads, after its epoll_wait, is a new
  // edge too, and a socket holds far less than 32 reads' worth, so some
  // always does (with the re-arm left out this case still passes). The next
  // case checks the re-arm.
  auto wait_for = [&](std::size_t bytes) {
    const Duration end = hr_now() + 5s;
    int avail = 0;
    while (hr_now() < end && ::ioctl(fd, FIONREAD, &avail) == 0 &&
           static_cast<std::size_t>(avail) < bytes)
      std::this_thread::yield();
  };
  auto wait_for_a_full_read = [&] { wait_for(std::min(kRead, kTotal - got)); };
  rec.data_hook = [&](net::Connection&, std::string_view d) {
    got += d.size();
    ++reads_this_turn;
    if (reads_this_turn == 31)
      wait_for(kTotal - got);
    else
      wait_for_a_full_read();
  };
  net::ServerOptions o;
  o.connection.edge_triggered_reads = edge;
  net::Server server(*t.wheel, rec, o);
  REQUIRE_FALSE(server.listen());
  const int c = connect_blocking(server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 1; }));
  server.for_each_connection([&](net::Connection& conn) { fd = server_fd(conn); });
  // Room for more than a full read in the socket while the next one waits
  // (the kernel caps it at net.core.rmem_max, doubled: 416 KiB by default).
  const int room = 1 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
  ::setsockopt(c, SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
  std::thread writer([&] {
    const std::string chunk(16 * 1024, 'x');
    std::size_t sent = 0;
    while (sent < kTotal) {
      const ssize_t n = ::write(c, chunk.data(), std::min(chunk.size(), kTotal - sent));
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
  });
  wait_for_a_full_read();
  std::size_t max_reads = 0;
  int turns = 0;
  const Duration end = hr_now() + 10s;
  while (got < kTotal && hr_now() < end) {
    reads_this_turn = 0;
    uv_run(&t.loop, UV_RUN_ONCE);
    if (reads_this_turn > 0) ++turns;
    max_reads = std::max(max_reads, reads_this_turn);
  }
  writer.join();
  CHECK(got == kTotal);
  CHECK(max_reads == 32);  // the bound, and it was reached
  CHECK(turns >= 2);
  ::close(c);
  REQUIRE(t.run_until([&] { return server.connection_count() == 0; }));
}

// The re-arm after a turn's reads (Connection::read_ready): everything the
// peer sends is in the socket before the turn, more than the turn may read,
// and nothing arrives after it, so no new edge reports the rest: only the
// re-arm (EPOLL_CTL_MOD, which looks at the socket again) does. The turn is
// 2 reads here (set_reads_per_turn_for_testing): 32 reads of 64 KiB do not
// fit in a socket's receive buffer at once. Without the re-arm the rest is
// never read and the case fails at its time limit.
TEST_CASE("A connection that spent a turn's reads with the rest in its socket reads it next turn",
          "[net][edge][turns]") {
  struct ReadsPerTurn {
    explicit ReadsPerTurn(int n) { EdgeReader::set_reads_per_turn_for_testing(n); }
    ~ReadsPerTurn() { EdgeReader::set_reads_per_turn_for_testing(0); }
  } two(2);
  TestLoop t(5ms);
  Recorder rec;
  rec.echo = false;
  constexpr std::size_t kTotal = 2 * kRead + 16 * 1024;
  std::size_t got = 0;
  std::size_t reads_this_turn = 0;
  rec.data_hook = [&](net::Connection&, std::string_view d) {
    got += d.size();
    ++reads_this_turn;
  };
  net::Server server(*t.wheel, rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  const int c = connect_blocking(server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 1; }));
  int fd = -1;
  server.for_each_connection([&](net::Connection& conn) { fd = server_fd(conn); });
  const int room = 1 << 20;  // 144 KiB fits whatever the system's default
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
  ::setsockopt(c, SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
  const std::string all(kTotal, 'x');
  REQUIRE(::write(c, all.data(), all.size()) == static_cast<ssize_t>(kTotal));
  // All of it in the server's socket before the loop runs again.
  REQUIRE(eventually([&] {
    int avail = 0;
    return ::ioctl(fd, FIONREAD, &avail) == 0 && static_cast<std::size_t>(avail) == kTotal;
  }));

  // The first turn that reads.
  const Duration end = hr_now() + 5s;
  while (got == 0 && hr_now() < end) {
    reads_this_turn = 0;
    uv_run(&t.loop, UV_RUN_NOWAIT);
  }
  if (edge_reads()) {
    CHECK(reads_this_turn == 2);  // the turn's bound, both reads full
    CHECK(got == 2 * kRead);
    // Nothing more is sent: the rest comes through the re-arm alone.
    CHECK(t.run_until([&] { return got == kTotal; }, 5s));
  } else {  // HEARTWHEEL_EDGE_READS=0: libuv reads, with its own bound of 32
    CHECK(EdgeReader::find(&t.loop) == nullptr);
    CHECK(t.run_until([&] { return got == kTotal; }, 5s));
  }
  CHECK(got == kTotal);
  ::close(c);
  REQUIRE(t.run_until([&] { return server.connection_count() == 0; }));
}

TEST_CASE("A connection closed by an earlier one's callback in the same batch is not read",
          "[net][edge][turns]") {
  const bool edge = GENERATE(true, false);
  CAPTURE(edge);
  TestLoop t(5ms);
  Recorder rec;
  rec.echo = false;
  net::ServerOptions o;
  o.connection.edge_triggered_reads = edge;
  net::Server server(*t.wheel, rec, o);
  REQUIRE_FALSE(server.listen());
  const int a = connect_blocking(server.port());
  const int b = connect_blocking(server.port());
  const int keep = connect_blocking(server.port());  // keeps the reader alive after
  REQUIRE(t.run_until([&] { return server.connection_count() == 3; }));
  std::map<std::uint64_t, net::Connection*> conns;
  server.for_each_connection([&](net::Connection& c) { conns[c.id()] = &c; });
  std::vector<std::uint64_t> read;
  // Whichever of a and b is read first closes the other (edge mode: a, the
  // first whose data came).
  rec.data_hook = [&](net::Connection& c, std::string_view) {
    read.push_back(c.id());
    if (read.size() == 1)
      for (auto& [id, other] : conns)
        if (id != c.id() && id != conns.rbegin()->first) other->close(CloseReason::local);
  };
  std::vector<pollfd> server_side;
  for (auto& [id, c] : conns)
    if (id != conns.rbegin()->first) server_side.push_back({server_fd(*c), POLLIN, 0});
  REQUIRE(::write(a, "1", 1) == 1);
  REQUIRE(::write(b, "1", 1) == 1);
  REQUIRE(eventually([&] { return ::poll(server_side.data(), server_side.size(), 0) == 2; }));
  const bool through_reader = edge && edge_reads();
  const std::uint64_t stale_before = through_reader ? EdgeReader::find(&t.loop)->stale_events() : 0;
  uv_run(&t.loop, UV_RUN_NOWAIT);  // one turn: both in its batch
  CHECK(read.size() == 1);
  if (through_reader) {
    CHECK(read.front() == conns.begin()->first);
    EdgeReader* reader = EdgeReader::find(&t.loop);
    REQUIRE(reader != nullptr);
    CHECK(reader->stale_events() == stale_before + 1);  // b's event, dropped
  }
  REQUIRE(t.run_until([&] { return rec.closed == 1; }));
  CHECK(read.size() == 1);
  // The others still read.
  REQUIRE(::write(keep, "2", 1) == 1);
  REQUIRE(t.run_until([&] { return read.size() == 2; }));
  CHECK(read.back() == conns.rbegin()->first);
  ::close(a);
  ::close(b);
  ::close(keep);
  REQUIRE(t.run_until([&] { return server.connection_count() == 0; }));
}

TEST_CASE("A connection whose edge reader cannot be made reads through libuv", "[net][edge]") {
  TestLoop t(5ms);
  Recorder rec;
  net::Server server(*t.wheel, rec, net::ServerOptions{});
  // As epoll_create1 failing: for the server's hold, then the connection.
  EdgeReader::refuse_next_for_testing(2);
  REQUIRE_FALSE(server.listen());
  RawClient first(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 1; }));
  CHECK(EdgeReader::find(&t.loop) == nullptr);
  if (!edge_reads()) EdgeReader::refuse_next_for_testing(0);  // no reader was asked for
  first.send("abc");
  REQUIRE(t.run_until([&] { return first.received == "abc"; }));
  // The next connection makes the reader; the first stays on libuv's reads.
  RawClient second(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 2; }));
  if (edge_reads()) {
    REQUIRE(EdgeReader::find(&t.loop) != nullptr);
    CHECK(EdgeReader::find(&t.loop)->members() == 1);
  } else {
    CHECK(EdgeReader::find(&t.loop) == nullptr);
  }
  second.send("def");
  first.send("ghi");
  REQUIRE(t.run_until([&] { return second.received == "def" && first.received == "abcghi"; }));
  EdgeReader::refuse_next_for_testing(0);
}
