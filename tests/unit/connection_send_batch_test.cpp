// Connection::write(SharedBytes) inside a SendBatchScope: the sends wait for
// the thread's io_uring batch and leave when the outermost scope closes
// (lib/src/net/send_batch.h), in order with every other write of their
// connection, before a close, with a short send's rest queued by reference
// and a failed send closing its connection. Where io_uring is unavailable
// the same cases hold with the sends going out at once (the cases that only
// make sense with a batch say so and check the rest).
#include <heartwheel/common/send_batch_scope.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "host_reads.h"

using namespace std::chrono_literals;
using namespace heartwheel::net;
using heartwheel::SendBatchScope;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;
using heartwheel::testing::read_exactly;

namespace {

struct Quiet final : Handler {
  void on_data(Connection&, std::string_view) override {}
  void on_eof(Connection&) override {}  // half-open stays open: the send finds out
};

ConnectionOptions options(bool batch = true) {
  ConnectionOptions o;
  o.write.stall_timeout = 0s;
  o.batch_shared_writes = batch;
  return o;
}

SharedBytes text(std::string s) { return std::make_shared<const std::string>(std::move(s)); }

}  // namespace

TEST_CASE("Shared writes inside a send batch scope leave together when the scope closes",
          "[connection][write][batch]") {
  Quiet quiet;  // before the host: its destructor closes connections (on_close)
  Host host(options());
  std::vector<Peer*> peers;
  for (int i = 0; i < 4; ++i) peers.push_back(&host.open(quiet));
  const SharedBytes frame = text("publication 1");
  bool held = false;
  {
    SendBatchScope scope;
    for (Peer* p : peers) REQUIRE_FALSE(p->connection()->write(frame));
    held = peers[0]->connection()->bytes_written() == 0;
    if (held) {
      for (Peer* p : peers) CHECK(p->connection()->bytes_written() == 0);
      CHECK(host.stats().bytes_written == 0);
      CHECK(frame.use_count() == 1 + 4);  // held by reference, not copied
    } else {
      WARN("io_uring unavailable here: the sends went out at once");
    }
  }
  for (Peer* p : peers) {
    CHECK(p->connection()->bytes_written() == frame->size());
    CHECK(p->received() == *frame);
  }
  CHECK(host.stats().bytes_written == 4 * frame->size());
  CHECK(frame.use_count() == 1);  // the batch let go of every reference
}

TEST_CASE("Another write to a connection whose send waits in the batch goes after it",
          "[connection][write][batch]") {
  Quiet quiet;
  Host host(options());
  Peer& a = host.open(quiet);
  Peer& b = host.open(quiet);
  {
    SendBatchScope scope;
    REQUIRE_FALSE(a.connection()->write(text("first ")));
    REQUIRE_FALSE(b.connection()->write(text("other")));
    REQUIRE_FALSE(a.connection()->write("second "));      // copied: sends the batch first
    REQUIRE_FALSE(a.connection()->write(text("third")));  // held again, after them
    {
      SendBatchScope nested;  // an inner scope's end sends nothing
      REQUIRE_FALSE(b.connection()->write(text(" more")));
    }
  }
  CHECK(a.received() == "first second third");
  CHECK(b.received() == "other more");
}

TEST_CASE("Closing a connection whose send waits in the batch sends it before the close",
          "[connection][write][batch]") {
  Quiet quiet;
  Host host(options());
  Peer& p = host.open(quiet);
  {
    SendBatchScope scope;
    REQUIRE_FALSE(p.connection()->write(text("last words")));
    p.connection()->close();
  }
  CHECK(p.received() == "last words");
  host.poll();
  CHECK_FALSE(p.open());
  CHECK(p.close_reason() == CloseReason::local);
  CHECK(host.stats().bytes_dropped == 0);
}

TEST_CASE("A batched send the socket cannot take whole queues its rest by reference",
          "[connection][write][batch]") {
  Quiet quiet;
  Host host(options());
  Peer& p = host.open(quiet);
  const SharedBytes big = std::make_shared<const std::string>(std::size_t{8} << 20, 'b');
  {
    SendBatchScope scope;
    REQUIRE_FALSE(p.connection()->write(big));
  }
  Connection& c = *p.connection();
  CHECK(c.queued_bytes() > 0);  // 8 MiB do not fit a socket pair's buffers
  CHECK(c.bytes_written() + c.queued_bytes() == big->size());
  CHECK(big.use_count() == 2);  // the queue's reference, no copy
  const std::string got = read_exactly(host, p, big->size());
  CHECK(got == *big);
  CHECK(c.queued_bytes() == 0);
  CHECK(big.use_count() == 1);
}

TEST_CASE("A batched send to a peer that went away closes the connection and counts the bytes",
          "[connection][write][batch]") {
  Quiet quiet;  // keeps the half-closed connection open: only the send can find out
  Host host(options());
  Peer& p = host.open(quiet);
  p.close();
  REQUIRE(p.open());
  const SharedBytes frame = text("nobody reads this");
  {
    SendBatchScope scope;
    REQUIRE_FALSE(p.connection()->write(frame));
  }
  host.poll();
  CHECK_FALSE(p.open());
  CHECK(p.close_reason() == CloseReason::peer_closed);
  CHECK(host.stats().bytes_dropped == frame->size());
  CHECK(host.stats().bytes_written == 0);
}

TEST_CASE("With batch_shared_writes off a shared write inside a scope goes out at once",
          "[connection][write][batch]") {
  Quiet quiet;
  Host host(options(false));
  Peer& p = host.open(quiet);
  const SharedBytes frame = text("at once");
  {
    SendBatchScope scope;
    REQUIRE_FALSE(p.connection()->write(frame));
    CHECK(p.connection()->bytes_written() == frame->size());
  }
  CHECK(p.received() == "at once");
}
