// Connection on a manual clock (heartwheel::testing::Host): the write path
// (write idle counts bytes the kernel took, not bytes queued; the stall
// timeout and drop accounting), the deadlines layers set by kind, and the
// size of an idle connection.
#include <heartwheel/common/error.h>
#include <heartwheel/http/deadlines.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/names.h>
#include <heartwheel/testing/host.h>
#include <heartwheel/ws/deadlines.h>

#include <catch2/catch.hpp>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using namespace heartwheel::net;
using heartwheel::testing::Host;

namespace {

struct Events final : Handler {
  void on_data(Connection&, std::string_view) override {}
  DeadlineAction on_deadline(Connection&, DeadlineEvent e) override {
    idle.push_back(e);
    return keep ? DeadlineAction::keep : DeadlineAction::close;
  }
  void on_writable(Connection&, bool w) override { writable.push_back(w); }
  void on_close(Connection& c, CloseReason r, std::error_code) override {
    reason = r;
    dropped = c.bytes_dropped();
  }
  std::vector<DeadlineEvent> idle;
  std::vector<bool> writable;
  bool keep = true;
  CloseReason reason = CloseReason::local;
  std::uint64_t dropped = 0;
};

// Keeps the reason and error a connection closed with.
struct Closes final : Handler {
  void on_data(Connection&, std::string_view) override {}
  void on_close(Connection&, CloseReason r, std::error_code e) override {
    reason = r;
    error = e;
  }
  CloseReason reason = CloseReason::local;
  std::error_code error;
};

// A layer of this test, as a layer above net would define it: a kind and
// the reason it closes with, in the layers' ranges, registered before main.
constexpr Deadline kAuthExpiry{29};
constexpr CloseReason kAuthExpired{58};
constexpr CloseReasonName kTestReasons[] = {{kAuthExpired, "auth_expired"}};
constexpr DeadlineName kTestKinds[] = {{kAuthExpiry, "auth_expiry", kAuthExpired}};
const NameRegistrar kTestNames{kTestReasons, kTestKinds};

// Writes until the socket pair is full and the rest queues.
std::size_t fill(Connection& c) {
  const std::string block(64 * 1024, 'q');
  std::size_t written = 0;
  while (c.queued_bytes() == 0 && written < (std::size_t{64} << 20)) {
    REQUIRE_FALSE(c.write(block));
    written += block.size();
  }
  return written;
}

}  // namespace

TEST_CASE("Write idle counts bytes the kernel took, not bytes queued", "[connection][idle]") {
  ConnectionOptions o;
  o.idle.write_idle = 1s;
  o.write.stall_timeout = std::chrono::seconds(0);
  Host host(o);
  Events events;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  host.run_for(600ms);
  fill(*conn);  // the peer does not read: everything after this queues
  REQUIRE(conn->queued_bytes() > 0);
  host.run_for(300ms);
  CHECK(events.idle.empty());          // 900 ms: the last completed write was at 600 ms
  REQUIRE_FALSE(conn->write("more"));  // queued only: does not count
  host.run_for(699ms);
  CHECK(events.idle.empty());
  host.run_for(1ms);
  REQUIRE(events.idle.size() == 1);  // 1.6 s = the last completed write + 1 s
  CHECK(events.idle[0].kind == Deadline::write_idle);
  conn->close();
  host.poll();
  CHECK_FALSE(peer.open());
}

TEST_CASE("The byte counters carry past 4 GiB into the side block, exact to the byte",
          "[connection][memory]") {
  Host host(ConnectionOptions{});
  Events events;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  REQUIRE_FALSE(conn->write("abc"));
  const std::size_t three_gib = std::size_t{3} << 30;
  Host::count_written(*conn, three_gib);  // below 2^32 with the 3 bytes: no carry yet
  CHECK(conn->bytes_written() == three_gib + 3);
  Host::count_written(*conn, three_gib);  // past 2^32: the high half goes to the side block
  CHECK(conn->bytes_written() == 2 * three_gib + 3);
  Host::count_written(*conn, std::size_t{5} << 32);  // several carries at once
  CHECK(conn->bytes_written() == 2 * three_gib + 3 + (std::uint64_t{5} << 32));
  CHECK(host.stats().bytes_written == conn->bytes_written());
  CHECK(conn->bytes_read() == 0);
  conn->close();
  host.poll();
  CHECK_FALSE(peer.open());
}

TEST_CASE("on_close gets the close reason and error the connection closed with",
          "[connection][memory]") {
  Host host(ConnectionOptions{});
  const std::pair<CloseReason, std::error_code> cases[] = {
      {CloseReason::error, heartwheel::uv_error(UV_ECONNRESET)},
      {CloseReason::error, heartwheel::uv_error(UV__EOF)},  // libuv's lowest code, -4095
      {CloseReason::write_stall, heartwheel::make_error_code(heartwheel::errc::timed_out)},
      {kAuthExpired, {}},  // a layer's reason (58): kept in 6 bits
      {CloseReason::proxy_untrusted, {}},
  };
  for (const auto& [reason, error] : cases) {
    Closes closes;
    auto& peer = host.open(closes);
    peer.connection()->close(reason, error);
    host.poll();
    CHECK_FALSE(peer.open());
    CHECK(closes.reason == reason);
    CHECK(closes.error == error);
  }
  // A value outside the category's range (another category's) is kept as
  // UV_UNKNOWN: the connection keeps 13 bits of it (connection.h).
  Closes closes;
  auto& peer = host.open(closes);
  peer.connection()->close(CloseReason::error, std::error_code(100000, std::generic_category()));
  host.poll();
  CHECK(closes.error == heartwheel::uv_error(UV_UNKNOWN));
}

TEST_CASE("Queued bytes with no progress close the connection as write_stall, counted as dropped",
          "[connection][write]") {
  ConnectionOptions o;
  o.write.stall_timeout = 2s;
  o.write.high_watermark = 128 * 1024;
  o.write.low_watermark = 32 * 1024;
  Host host(o);
  Events events;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  fill(*conn);
  const std::size_t queued = conn->queued_bytes();
  REQUIRE(queued > 0);
  host.run_for(1999ms);
  CHECK_FALSE(conn->closing());
  host.run_for(1ms);
  host.poll();
  REQUIRE(peer.close_reason() == CloseReason::write_stall);
  CHECK(events.reason == CloseReason::write_stall);
  CHECK(events.dropped == queued);
  CHECK(host.stats().bytes_dropped == queued);
}

TEST_CASE("Crossing the watermarks reports writability both ways", "[connection][write]") {
  ConnectionOptions o;
  o.write.high_watermark = 64 * 1024;
  o.write.low_watermark = 0;
  o.write.max_queued_bytes = 0;
  Host host(o);
  Events events;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  fill(*conn);
  const std::string block(128 * 1024, 'w');
  REQUIRE_FALSE(conn->write(block));
  REQUIRE(events.writable == std::vector<bool>{false});
  CHECK_FALSE(conn->writable());
  CHECK_FALSE(conn->reading());  // slow-reader policy: pause reading
  // The peer drains everything; the queue empties over a few loop turns.
  for (int i = 0; i < 1000 && conn->queued_bytes() > 0; ++i) peer.received();
  CHECK(conn->queued_bytes() == 0);
  CHECK(events.writable == std::vector<bool>{false, true});
  CHECK(conn->reading());
  conn->close();
  host.poll();
  CHECK_FALSE(peer.open());
}

TEST_CASE("Writes after close are refused and counted as dropped", "[connection][write]") {
  Host host;
  Events events;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  conn->close(CloseReason::local);
  CHECK(conn->write("late") == heartwheel::errc::closed);
  CHECK(host.stats().bytes_dropped == 4);
  host.poll();
  CHECK(peer.close_reason() == CloseReason::local);
}

TEST_CASE("Several parts go out in order, also when part of them had to queue",
          "[connection][write]") {
  Host host;
  Events events;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  REQUIRE_FALSE(conn->write({"HTTP/1.1 200 OK\r\n", "", "\r\n", "body"}));
  CHECK(peer.received() == "HTTP/1.1 200 OK\r\n\r\nbody");
  // Now with a full socket: a big middle part queues after a partial write.
  const std::string big(1 << 20, 'm');
  REQUIRE_FALSE(conn->write({"<", big, ">"}));
  std::string got;
  for (int i = 0; i < 10000 && got.size() < big.size() + 2; ++i) got += peer.received();
  REQUIRE(got.size() == big.size() + 2);
  CHECK(got.front() == '<');
  CHECK(got.back() == '>');
  CHECK(got.substr(1, big.size()) == big);
  CHECK(conn->bytes_written() == 17 + 2 + 4 + 1 + big.size() + 1);
  conn->close();
  host.poll();
  CHECK_FALSE(peer.open());
}

TEST_CASE("A per-connection idle policy overrides the server's and re-arms at once",
          "[connection][idle]") {
  ConnectionOptions o;
  o.idle.read_idle = 10s;
  Host host(o);
  Events events;
  events.keep = false;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  host.run_for(1s);
  conn->set_idle_policy({.read_idle = 500ms});
  CHECK(conn->idle_policy().read_idle == 500ms);
  CHECK(&conn->idle_policy() != &host.options().idle);  // a copy, not the shared one
  CHECK_THROWS_AS(conn->set_idle_policy({.read_idle = -1s}), std::invalid_argument);
  // Silent since it opened 1 s ago: under the new policy it is overdue, so
  // the entry moved from 10 s to now and fires at the next expiry run.
  CHECK(conn->next_timer_deadline() <= host.now());
  host.run_for(1ms);
  CHECK(peer.close_reason() == CloseReason::read_idle);
  CHECK(events.reason == CloseReason::read_idle);
}

TEST_CASE("A layer's deadline kind fires through the connection and closes with its reason",
          "[connection][slots]") {
  Host host;
  Events events;
  events.keep = false;
  auto& peer = host.open(events);
  Connection* conn = peer.connection();
  conn->set_timeout(kAuthExpiry, 2s);
  conn->set_timeout(Deadline::ping, 5s);  // another layer's, beside it
  CHECK(conn->deadline(kAuthExpiry) == host.now() + 2s);
  CHECK(conn->next_timer_deadline() == host.now() + 2s);
  host.run_for(2s);
  REQUIRE(events.idle.size() == 1);
  CHECK(events.idle[0].kind == kAuthExpiry);
  CHECK(peer.close_reason() == kAuthExpired);
  CHECK(host.stats().idle_events[29] == 1);
  CHECK(host.stats().closed(kAuthExpired) == 1);
}

namespace {
// Six layered deadlines at once (every claimed slot), then a seventh kind.
void overfill(Connection& conn) {
  conn.set_timeout(Deadline::ping, 1s);
  conn.set_timeout(Deadline::pong_timeout, 2s);
  conn.set_timeout(heartwheel::http::deadline::header_timeout, 3s);
  conn.set_timeout(heartwheel::http::deadline::body_timeout, 4s);
  conn.set_timeout(heartwheel::http::deadline::keepalive_timeout, 5s);
  conn.set_timeout(heartwheel::ws::deadline::close_timeout, 6s);
  REQUIRE_FALSE(conn.closing());
  conn.set_timeout(kAuthExpiry, 7s);
}
}  // namespace

TEST_CASE("More layered deadlines at once than claimed slots: an assertion, else closed as error",
          "[connection][slots]") {
#ifndef NDEBUG
  // Debug builds stop at the programming error.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);  // not Catch2's handler: die of it
    ::close(STDERR_FILENO);         // the assertion's message is expected
    Events events;
    Host host;
    overfill(*host.open(events).connection());
    ::_exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
#else
  // Release builds never run on without the deadline: the connection closes.
  Closes why;  // outlives the host
  Host host;
  auto& peer = host.open(why);
  overfill(*peer.connection());
  CHECK(peer.connection()->closing());
  host.poll();
  CHECK_FALSE(peer.open());
  CHECK(why.reason == CloseReason::error);
  CHECK(why.error == heartwheel::make_error_code(heartwheel::errc::limit_reached));
#endif
}

TEST_CASE("A cleared or fired layer deadline gives its slot back to the next kind",
          "[connection][slots]") {
  Host host;
  Events events;  // keeps the connection open on every deadline
  auto& peer = host.open(events);
  Connection& conn = *peer.connection();
  conn.set_timeout(Deadline::ping, 1s);  // fires first, below
  conn.set_timeout(Deadline::pong_timeout, 20s);
  conn.set_timeout(heartwheel::http::deadline::header_timeout, 30s);
  conn.set_timeout(heartwheel::http::deadline::body_timeout, 40s);
  conn.set_timeout(heartwheel::http::deadline::keepalive_timeout, 50s);
  conn.set_timeout(heartwheel::ws::deadline::close_timeout, 60s);
  // Every claimed slot is in use. A fired slot is free again: a seventh
  // kind fits without an assertion and keeps its deadline.
  host.run_for(1s);
  REQUIRE(events.idle.size() == 1);
  CHECK(events.idle[0].kind == Deadline::ping);
  CHECK(conn.deadline(Deadline::ping) == heartwheel::kNever);
  conn.set_timeout(kAuthExpiry, 2s);
  CHECK(conn.deadline(kAuthExpiry) == host.now() + 2s);
  // So is a cleared one: ping comes back in body_timeout's slot.
  conn.clear_deadline(heartwheel::http::deadline::body_timeout);
  CHECK(conn.deadline(heartwheel::http::deadline::body_timeout) == heartwheel::kNever);
  conn.set_timeout(Deadline::ping, 3s);
  CHECK(conn.deadline(Deadline::ping) == host.now() + 3s);
  CHECK_FALSE(conn.closing());
  // Both fire at their times, the others stay as they were.
  host.run_for(3s);
  REQUIRE(events.idle.size() == 3);
  CHECK(events.idle[1].kind == kAuthExpiry);
  CHECK(events.idle[2].kind == Deadline::ping);
  CHECK(conn.deadline(heartwheel::ws::deadline::close_timeout) != heartwheel::kNever);
  CHECK(peer.open());
}

TEST_CASE("An idle Connection stays in one 528-byte malloc chunk", "[memory]") {
  // The socket handle is 248 bytes of it, the deadline set (every timeout of
  // every layer, one wheel entry) 112; write queues exist only while bytes
  // are pending, reads share one buffer per loop thread, and protocol state
  // (heartbeats included) lives in the protocol's handler.
  CHECK(sizeof(uv_tcp_t) == 248);
  CHECK(sizeof(Connection) <= 496);  // malloc adds 8: one 512-byte chunk (memory_budget_test.cpp)
  WARN("sizeof(Connection) = " << sizeof(Connection));
}
