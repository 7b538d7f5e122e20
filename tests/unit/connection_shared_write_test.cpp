// Connection::write(SharedBytes): what the kernel does not take at once is
// queued as a reference to the caller's buffer, never a copy. N connections
// that queue one publication hold N references to ONE buffer (pointer
// identity: use_count), bytes arrive intact and in order with copied writes
// around them, and the references go once written or dropped.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "host_reads.h"

using namespace std::chrono_literals;
using namespace heartwheel::net;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;
using heartwheel::testing::read_exactly;

namespace {

struct Quiet final : Handler {
  void on_data(Connection&, std::string_view) override {}
};

// Copies blocks until the socket pair is full and the rest queues; returns
// the bytes written.
std::string fill_until_queued(Connection& c) {
  const std::string block(64 * 1024, 'f');
  std::string sent;
  while (c.queued_bytes() == 0 && sent.size() < (std::size_t{64} << 20)) {
    REQUIRE_FALSE(c.write(block));
    sent += block;
  }
  return sent;
}

// One connection to a peer, the write-stall rule off (the tests fill the
// socket and read at their own pace).
struct OnePeer {
  static ConnectionOptions options() {
    ConnectionOptions o;
    o.write.stall_timeout = 0s;
    return o;
  }
  Quiet quiet;  // before the host: its destructor closes connections (on_close)
  Host host{options()};
  Peer& peer = host.open(quiet);
  Connection& c = *peer.connection();
};

SharedBytes make_buffer(std::size_t size, char c) {
  return std::make_shared<const std::string>(size, c);
}

}  // namespace

TEST_CASE("N connections that queue one shared buffer hold N references to it, not N copies",
          "[connection][write][shared]") {
  ConnectionOptions o;
  o.write.stall_timeout = 0s;
  Quiet quiet;  // before the host: its destructor closes connections (on_close)
  Host host(o);
  constexpr int kConnections = 8;
  std::vector<Peer*> peers;
  std::vector<std::string> filler;
  for (int i = 0; i < kConnections; ++i) {
    peers.push_back(&host.open(quiet));
    filler.push_back(fill_until_queued(*peers.back()->connection()));
  }
  const SharedBytes frame = make_buffer(100 * 1024, 'p');
  const std::string* bytes = frame.get();
  for (Peer* p : peers) {
    Connection& c = *p->connection();
    const std::size_t before = c.queued_bytes();
    REQUIRE_FALSE(c.write(frame));
    CHECK(c.queued_bytes() == before + frame->size());  // counted per connection ...
  }
  CHECK(frame.use_count() == 1 + kConnections);  // ... but held once: one reference each
  CHECK(frame.get() == bytes);

  for (int i = 0; i < kConnections; ++i) {
    const std::string got =
        read_exactly(host, *peers[static_cast<std::size_t>(i)],
                     filler[static_cast<std::size_t>(i)].size() + frame->size());
    REQUIRE(got.size() == filler[static_cast<std::size_t>(i)].size() + frame->size());
    CHECK(got == filler[static_cast<std::size_t>(i)] + *frame);
  }
  host.run_for(1ms);
  CHECK(frame.use_count() == 1);  // written: every reference released
  for (Peer* p : peers) CHECK(p->connection()->queued_bytes() == 0);
}

TEST_CASE_METHOD(
    OnePeer, "A shared buffer larger than the socket takes is queued from where the kernel stopped",
    "[connection][write][shared]") {
  std::string big(8 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
  const auto frame = std::make_shared<const std::string>(std::move(big));
  REQUIRE_FALSE(c.write(frame));
  REQUIRE(c.queued_bytes() > 0);  // the kernel took only part of it ...
  CHECK(c.queued_bytes() < frame->size());
  CHECK(frame.use_count() == 2);  // ... and the rest is a reference with an offset
  CHECK(read_exactly(host, peer, frame->size()) == *frame);
  host.run_for(1ms);
  CHECK(frame.use_count() == 1);
}

TEST_CASE_METHOD(OnePeer, "Copied and shared writes go out in the order they were made",
                 "[connection][write][shared]") {
  std::string expected = fill_until_queued(c);
  const SharedBytes a = make_buffer(1000, 'A');
  const SharedBytes b = make_buffer(3000, 'B');
  REQUIRE_FALSE(c.write("one"));
  REQUIRE_FALSE(c.write(a));
  REQUIRE_FALSE(c.write({"two", "three"}));
  REQUIRE_FALSE(c.write(b));
  REQUIRE_FALSE(c.write(a));  // the same buffer twice: two references
  REQUIRE_FALSE(c.write("four"));
  CHECK(a.use_count() == 3);
  expected += "one" + *a + "twothree" + *b + *a + "four";
  CHECK(read_exactly(host, peer, expected.size()) == expected);
  host.run_for(1ms);
  CHECK(a.use_count() == 1);
  CHECK(b.use_count() == 1);
}

TEST_CASE("Shared writes are refused like copied ones, and a refused buffer is not kept",
          "[connection][write][shared]") {
  ConnectionOptions o;
  o.write.stall_timeout = 0s;
  o.write.high_watermark = 64 * 1024;
  o.write.low_watermark = 16 * 1024;
  o.write.max_queued_bytes = 256 * 1024;
  Quiet quiet;  // before the host: its destructor closes connections (on_close)
  Host host(o);
  Peer& peer = host.open(quiet);
  Connection& c = *peer.connection();
  CHECK(c.write(SharedBytes{}) == heartwheel::errc::invalid_argument);

  fill_until_queued(c);
  const SharedBytes too_big = make_buffer(300 * 1024, 'x');
  CHECK(c.write(too_big) == heartwheel::errc::limit_reached);
  CHECK(too_big.use_count() == 1);
  CHECK(c.bytes_dropped() == too_big->size());

  const SharedBytes kept = make_buffer(1024, 'k');
  REQUIRE_FALSE(c.write(kept));
  CHECK(kept.use_count() == 2);
  const std::uint64_t dropped = c.bytes_dropped();
  const std::size_t queued = c.queued_bytes();
  c.close(CloseReason::local);  // queued bytes are dropped and counted
  CHECK(c.bytes_dropped() == dropped + queued);
  CHECK(c.write(kept) == heartwheel::errc::closed);
  host.run_for(1ms);
  CHECK_FALSE(peer.open());
  CHECK(kept.use_count() == 1);  // the closed connection released its reference
}

TEST_CASE_METHOD(OnePeer,
                 "A head and a shared body: the head copied, the body referenced, in order",
                 "[connection][write][shared]") {
  CHECK(c.write("head", SharedBytes{}) == heartwheel::errc::invalid_argument);

  // Taken at once (nothing queued): one writev, nothing kept.
  const SharedBytes body = make_buffer(2000, 'b');
  REQUIRE_FALSE(c.write("HEAD1\r\n", body));
  CHECK(body.use_count() == 1);
  std::string expected = "HEAD1\r\n" + *body;
  CHECK(read_exactly(host, peer, expected.size()) == expected);

  // Behind a full socket: the head's bytes are copied (the caller's buffer
  // may be reused at once), the body is one more reference.
  expected = fill_until_queued(c);
  std::string head = "HEAD2\r\n";
  REQUIRE_FALSE(c.write(head, body));
  head.assign("overwritten");
  CHECK(body.use_count() == 2);
  REQUIRE_FALSE(c.write("after"));
  expected += "HEAD2\r\n" + *body + "after";
  CHECK(read_exactly(host, peer, expected.size()) == expected);
  host.run_for(1ms);
  CHECK(body.use_count() == 1);
}
