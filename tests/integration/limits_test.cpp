// Limits and bad input: connections over the maximum are refused and
// counted; a handler that throws loses its own connection only.
#include <heartwheel/net/server.h>

#include <csignal>
#include <stdexcept>

#include <fcntl.h>
#include <sys/resource.h>

#include "net_test_support.h"

using namespace hwtest;
using net::CloseReason;

TEST_CASE("Connections beyond max_connections are refused and counted as limit", "[net][limits]") {
  TestLoop t(5ms);
  Recorder rec;
  net::ServerOptions o;
  o.max_connections = 5;
  net::Server server(*t.wheel, rec, o);
  REQUIRE_FALSE(server.listen());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<RawClient>(&t.loop, server.port()));
    REQUIRE(t.run_until([&] { return clients.back()->connected || clients.back()->closed; }));
    t.run_for(10ms);
  }
  REQUIRE(t.run_until([&] { return server.stats().closed(CloseReason::limit) == 3; }));
  CHECK(server.connection_count() == 5);
  CHECK(server.stats().accepted == 8);
  REQUIRE(t.run_until([&] {
    int closed = 0;
    for (auto& c : clients) closed += c->closed;
    return closed == 3;
  }));
  for (int i = 0; i < 5; ++i) CHECK_FALSE(clients[i]->closed);
  // When one leaves, a new one fits again.
  clients[0].reset();
  REQUIRE(t.run_until([&] { return server.connection_count() == 4; }));
  RawClient again(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 5; }));
  again.send("hi");
  REQUIRE(t.run_until([&] { return again.received == "hi"; }));
}

TEST_CASE("A handler exception closes that one connection with reason error", "[net][errors]") {
  TestLoop t(5ms);
  Recorder rec;
  rec.data_hook = [](net::Connection& c, std::string_view data) {
    if (data == "boom") throw std::runtime_error("bad frame");
    c.write(data);
  };
  net::Server server(*t.wheel, rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  RawClient bad(&t.loop, server.port());
  std::vector<std::unique_ptr<RawClient>> good;
  for (int i = 0; i < 10; ++i) good.push_back(std::make_unique<RawClient>(&t.loop, server.port()));
  REQUIRE(t.run_until([&] { return server.connection_count() == 11; }));
  bad.send("boom");
  REQUIRE(t.run_until([&] { return bad.closed; }));
  for (auto& g : good) g->send("ok");
  REQUIRE(t.run_until([&] {
    for (auto& g : good)
      if (g->received != "ok") return false;
    return true;
  }));
  CHECK(server.stats().closed(CloseReason::error) == 1);
  CHECK(server.stats().handler_exceptions == 1);
  CHECK(server.connection_count() == 10);
}

TEST_CASE("A half-closed peer gets its pending bytes, then the close counts as peer_closed",
          "[net][eof]") {
  TestLoop t(5ms);
  Recorder rec;
  net::Server server(*t.wheel, rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  RawClient c(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 1; }));
  const std::string big(4 << 20, 'z');  // more than the socket takes at once
  c.reading = false;                    // count bytes only
  c.send(big);
  c.shutdown_write();
  REQUIRE(t.run_until([&] { return rec.closed == 1; }));
  REQUIRE(t.run_until([&] { return c.closed; }));
  CHECK(c.bytes_received == big.size());
  CHECK(server.stats().closed(CloseReason::peer_closed) == 1);
  CHECK(server.stats().bytes_dropped == 0);
}

namespace {
rlimit g_saved_nofile{};
// Watchdog: if the loop spins on EMFILE, give descriptors back so it ends and
// the test fails on its checks instead of hanging.
extern "C" void restore_nofile(int) { ::setrlimit(RLIMIT_NOFILE, &g_saved_nofile); }
}  // namespace

TEST_CASE("EMFILE that libuv cannot shed pauses accepting instead of spinning, then resumes",
          "[net][limits]") {
  TestLoop t(5ms);
  Recorder rec;
  net::ServerOptions o;
  o.accept_pause = 100ms;
  net::Server server(*t.wheel, rec, o);
  REQUIRE_FALSE(server.listen());
  const int port = server.port();
  // Take libuv's reserve descriptor away (the state another thread can leave
  // it in), then cap descriptors at the lowest free one: every accept fails.
  if (t.loop.emfile_fd >= 0) ::close(t.loop.emfile_fd);
  t.loop.emfile_fd = -1;
  const int client = connect_blocking(port);  // sits in the backlog
  int lowest_free = 0;
  while (::fcntl(lowest_free, F_GETFD) != -1) ++lowest_free;
  ::getrlimit(RLIMIT_NOFILE, &g_saved_nofile);
  rlimit tight = g_saved_nofile;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  auto* previous = ::signal(SIGALRM, restore_nofile);
  ::alarm(2);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
  t.run_for(30ms);
  ::alarm(0);
  ::signal(SIGALRM, previous);
  ::setrlimit(RLIMIT_NOFILE, &g_saved_nofile);
  // One failed accept, one pause: libuv's retry loop ended.
  CHECK(server.stats().fd_exhausted == 1);
  CHECK(server.stats().accept_pauses == 1);
  ::close(client);
  // After the pause the server listens again on the same port.
  t.run_for(150ms);
  RawClient again(&t.loop, port);
  REQUIRE(t.run_until([&] { return again.connected || again.closed; }));
  again.send("back");
  REQUIRE(t.run_until([&] { return again.received == "back"; }));
  CHECK(server.port() == port);
}
