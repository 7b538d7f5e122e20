// http::NetHandler on real net::Connections driven by heartwheel::testing::Host
// (a manual clock, a socket pair, no network): what only a connection can
// show. The send timeout is the connection's write-stall rule (and a
// send_timeout other than the server's takes effect), drain goes through
// Handler::on_drain, a pipelining client that does not read gets its reading
// paused, and a streaming handler that respects writability never comes near
// the connection's cap.
#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <charconv>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "http_harness.h"

using namespace http_test;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;

namespace {

std::size_t param(const Request& req, std::string_view key, std::size_t fallback) {
  const auto text = req.query_param(key);
  std::size_t n = fallback;
  if (text) std::from_chars(text->data(), text->data() + text->size(), n);
  return n;
}

// Streams `total` bytes in `piece`-sized chunks. Polite: only while the
// Responder is writable, resuming from on_writable. Rude: all at once.
struct Stream {
  Responder r;
  std::size_t left = 0;
  std::size_t piece = 16 * 1024;
  net::Connection* conn = nullptr;
  std::size_t max_queued = 0;
  std::size_t refused = 0;

  void pump_politely() {
    while (left > 0 && r.writable()) write_one();
    if (left == 0)
      r.end();
    else
      r.on_writable([this] { pump_politely(); });
  }
  void pump_rudely() {
    while (left > 0) write_one();
    r.end();
  }
  void write_one() {
    const std::size_t n = std::min(piece, left);
    if (!r.write(std::string(n, 's'))) ++refused;
    left -= n;
    if (conn != nullptr) max_queued = std::max(max_queued, conn->queued_bytes());
  }
};

struct Fixture {
  explicit Fixture(net::ConnectionOptions connection = {}, SessionOptions session = {})
      : http(session, [this](const Request& req, Responder r) { route(req, std::move(r)); }),
        host(connection) {}

  void route(const Request& req, Responder r) {
    ++requests;
    const auto path = req.path();
    if (path == "/big") {
      r.respond(200, std::string(param(req, "n", 1 << 20), 'b'));
    } else if (path == "/async") {
      held.push_back(std::move(r));
    } else if (path == "/stream") {
      auto s = std::make_unique<Stream>();
      s->r = std::move(r);
      s->left = param(req, "n", 1 << 20);
      s->conn = conn;
      Stream& stream = *s;
      streams.push_back(std::move(s));
      REQUIRE(stream.r.begin(200, {{"Content-Type", "text/plain"}}));
      if (req.query_param("rude"))
        stream.pump_rudely();
      else
        stream.pump_politely();
    } else {
      r.respond(200, "hello\n");
    }
  }

  Peer& open() {
    Peer& peer = host.open(http);
    conn = peer.connection();
    return peer;
  }

  // The handler outlives the host (whose destructor closes what is open,
  // calling on_close); Responders go first, while their sessions live.
  NetHandler http;
  Host host;
  net::Connection* conn = nullptr;
  int requests = 0;
  std::vector<Responder> held;
  std::vector<std::unique_ptr<Stream>> streams;
};

std::size_t count(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Watermarks 64/16 KiB, a cap of 256 KiB.
net::ConnectionOptions small_queue() {
  net::ConnectionOptions o;
  o.write.high_watermark = 64 * 1024;
  o.write.low_watermark = 16 * 1024;
  o.write.max_queued_bytes = 256 * 1024;
  return o;
}

// Reads until `done(received)` holds or `limit` reads were made.
std::string read_until(Peer& peer, const std::function<bool(const std::string&)>& done,
                       int limit = 100000) {
  std::string all;
  for (int i = 0; i < limit && !done(all); ++i) all += peer.received(64 * 1024);
  return all;
}

// The peer reads everything: `n` answers arrive, every request was handled,
// nothing dropped, the connection still open.
void check_every_answer_arrives(Fixture& f, Peer& peer, int n) {
  const auto want = static_cast<std::size_t>(n);
  const std::string out =
      read_until(peer, [want](const std::string& s) { return count(s, "HTTP/1.1 200") == want; });
  CHECK(count(out, "HTTP/1.1 200") == want);
  CHECK(f.requests == n);
  CHECK(f.host.stats().bytes_dropped == 0);
  CHECK(peer.open());
}

}  // namespace

TEST_CASE("The send timeout is the connection's write stall: a reader that stops is closed",
          "[http][timeout][net]") {
  net::ConnectionOptions connection;
  connection.write.stall_timeout = 2s;
  SessionOptions session;
  session.send_timeout = 2s;  // the same as the server's: no policy of its own
  session.keepalive_timeout = 0s;
  Fixture f(connection, session);
  Peer& peer = f.open();
  peer.send("GET /big?n=33554432 HTTP/1.1\r\n\r\n");  // 32 MiB: far more than the socket takes
  REQUIRE(f.conn->queued_bytes() > 0);
  f.host.run_for(1500ms);
  REQUIRE(peer.open());
  // What the socket holds, so the connection can write again: progress at 1.5 s.
  REQUIRE(peer.received(std::size_t{1} << 20).size() > 0);
  f.host.run_for(1999ms);
  CHECK(peer.open());  // 3.499 s: progress restarted the timeout
  // The write-stall check that sees the progress (at 2 s) starts it over;
  // with none after it, the connection closes one stall period later.
  f.host.run_for(502ms);
  f.host.run_for(2000ms);
  REQUIRE_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::write_stall);
  CHECK(f.http.stats().send_timeouts == 1);
  CHECK(f.http.stats().closed(net::CloseReason::write_stall) == 1);
  CHECK(f.host.stats().bytes_dropped > 0);
}

TEST_CASE("The send timeout also bounds a graceful close whose last bytes never leave",
          "[http][timeout][net]") {
  net::ConnectionOptions connection;
  connection.write.stall_timeout = 1s;
  SessionOptions session;
  session.send_timeout = 1s;
  Fixture f(connection, session);
  Peer& peer = f.open();
  peer.send("GET /big?n=8388608 HTTP/1.1\r\nConnection: close\r\n\r\n");
  REQUIRE(f.conn->closing());  // flushing, then closing
  f.host.run_for(999ms);
  CHECK(peer.open());
  f.host.run_for(2ms);
  REQUIRE_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::write_stall);
  CHECK(f.http.stats().send_timeouts == 1);
  CHECK(f.http.stats().closed(net::CloseReason::protocol_close) == 1);  // the session's decision
}

TEST_CASE("A send_timeout other than the server's stall timeout takes effect, both ways",
          "[http][timeout][net]") {
  net::ConnectionOptions connection;
  SECTION("shorter than the server's") {
    connection.write.stall_timeout = 30s;
    SessionOptions session;
    session.send_timeout = 1s;
    Fixture f(connection, session);
    Peer& peer = f.open();
    CHECK(f.conn->write_policy().stall_timeout == 1s);
    peer.send("GET /big?n=8388608 HTTP/1.1\r\n\r\n");
    f.host.run_for(999ms);
    CHECK(peer.open());
    f.host.run_for(2ms);
    CHECK(peer.close_reason() == net::CloseReason::write_stall);
  }
  SECTION("off while the server's is on") {
    connection.write.stall_timeout = 1s;
    SessionOptions session;
    session.send_timeout = 0s;
    session.keepalive_timeout = 0s;
    Fixture f(connection, session);
    Peer& peer = f.open();
    CHECK(f.conn->write_policy().stall_timeout == 0s);
    peer.send("GET /big?n=8388608 HTTP/1.1\r\n\r\n");
    f.host.run_for(10s);
    CHECK(peer.open());
    CHECK(f.conn->queued_bytes() > 0);
  }
  SECTION("equal: the server's policy object itself, no override") {
    connection.write.stall_timeout = 5s;
    SessionOptions session;
    session.send_timeout = 5s;
    Fixture f(connection, session);
    f.open();
    CHECK(&f.conn->write_policy() == &f.host.options().write);
  }
}

TEST_CASE("on_drain closes an idle session at once and lets a busy one finish with close",
          "[http][drain][net]") {
  Fixture f;
  Peer& idle = f.open();
  idle.send("GET / HTTP/1.1\r\n\r\n");
  CHECK(count(idle.received(), "HTTP/1.1 200") == 1);
  Peer& busy = f.open();
  busy.send("GET /async HTTP/1.1\r\n\r\nGET /async HTTP/1.1\r\n\r\n");
  REQUIRE(f.held.size() == 2);
  CHECK(busy.connection()->in_request());
  CHECK_FALSE(idle.connection()->in_request());
  // What net::Server::drain does for every connection.
  f.http.on_drain(*idle.connection());
  f.http.on_drain(*busy.connection());
  f.host.poll();
  CHECK(idle.close_reason() == net::CloseReason::drain);
  CHECK(busy.open());
  f.held[0].respond(200, "first");
  f.held[1].respond(200, "second");
  const std::string out = busy.received();
  CHECK(count(out, "HTTP/1.1 200") == 2);
  CHECK(count(out, "Connection: close\r\n") == 1);
  CHECK(out.find("Connection: close\r\n") > out.find("first"));  // on the last answer only
  f.host.poll();
  CHECK(busy.close_reason() == net::CloseReason::drain);
  CHECK(f.http.stats().closed(net::CloseReason::drain) == 2);
  CHECK(f.http.session_count() == 0);
}

TEST_CASE("HTTP closes with the connection's close reasons, one enum for every layer",
          "[http][timeout][net]") {
  SessionOptions session;
  session.header_timeout = 1s;
  session.keepalive_timeout = 2s;
  Fixture f({}, session);
  Peer& silent = f.open();
  Peer& kept = f.open();
  Peer& slow = f.open();
  kept.send("GET / HTTP/1.1\r\n\r\n");
  slow.send("GET / HTTP/1.1\r\n");
  f.host.run_for(1001ms);
  CHECK(silent.close_reason() == http::close_reason::keepalive_timeout);  // first byte: quiet
  CHECK(slow.close_reason() == http::close_reason::header_timeout);
  CHECK(kept.open());
  f.host.run_for(1000ms);
  CHECK(kept.close_reason() == http::close_reason::keepalive_timeout);
  CHECK(f.host.stats()
            .closed_by_reason[static_cast<std::size_t>(http::close_reason::keepalive_timeout)] == 2);
  CHECK(f.http.stats().first_byte_timeouts == 1);
  CHECK(f.http.stats().keepalive_timeouts == 1);
  CHECK(f.http.stats().header_timeouts == 1);
}

TEST_CASE("A pipelining client that does not read gets its reading paused, then all answers",
          "[http][backpressure][net]") {
  net::ConnectionOptions connection;
  connection.write.high_watermark = 64 * 1024;
  connection.write.low_watermark = 16 * 1024;
  // The watermark alone (the next test: the default pipeline_queue_limit,
  // which holds the next request back well before it).
  SessionOptions session;
  session.pipeline_queue_limit = std::numeric_limits<std::size_t>::max();
  Fixture f(connection, session);
  Peer& peer = f.open();
  std::string pipeline;
  constexpr int kRequests = 200;
  for (int i = 0; i < kRequests; ++i) pipeline += "GET /big?n=32768 HTTP/1.1\r\n\r\n";
  peer.send(pipeline);  // ~6 KB of requests asking for ~6.4 MB of answers
  f.host.run_for(10ms);
  // The socket pair took a few hundred KiB; past the high watermark no new
  // request is parsed, so what is queued stays near one answer past it.
  CHECK(f.requests < 40);
  CHECK_FALSE(f.conn->writable());
  CHECK_FALSE(f.conn->reading());
  CHECK(f.conn->queued_bytes() <= 64 * 1024 + 33 * 1024);
  CHECK(f.http.stats().backpressure_pauses >= 1);
  const int answered_while_stuck = f.requests;
  f.host.run_for(1s);
  CHECK(f.requests == answered_while_stuck);
  // The client reads: every answer arrives, in order, none refused or dropped.
  check_every_answer_arrives(f, peer, kRequests);
}

TEST_CASE("A slow reader of pipelined answers holds at most one answer in our memory",
          "[http][backpressure][net]") {
  // Default watermarks (1 MiB): below them only pipeline_queue_limit (0)
  // holds the next request back until the kernel took the last answer. The
  // slow-read attack: 16 KiB answers, 200 pipelined, nothing read.
  Fixture f;
  Peer& peer = f.open();
  std::string pipeline;
  constexpr int kRequests = 200;
  for (int i = 0; i < kRequests; ++i) pipeline += "GET /big?n=16384 HTTP/1.1\r\n\r\n";
  peer.send(pipeline);
  f.host.run_for(10ms);
  f.host.run_for(1s);
  // The socket pair took what it could; our side holds one answer at most
  // (without the limit: up to the 1 MiB high watermark, ~64 answers).
  CHECK(f.conn->queued_bytes() <= 17 * 1024);
  CHECK(f.conn->writable());
  CHECK_FALSE(f.conn->reading());
  CHECK(f.requests < kRequests);
  CHECK(f.http.stats().backpressure_pauses >= 1);
  // Reading lets every request through, one drained answer at a time, in order.
  check_every_answer_arrives(f, peer, kRequests);
}

TEST_CASE("A streaming handler that respects writability never comes near the cap",
          "[http][backpressure][stream][net]") {
  Fixture f(small_queue());
  Peer& peer = f.open();
  constexpr std::size_t kTotal = 4 << 20;  // 16 times the cap
  peer.send("GET /stream?n=4194304 HTTP/1.1\r\n\r\n");
  REQUIRE(f.streams.size() == 1);
  const std::string out = read_until(peer, [](const std::string& s) {
    return s.size() >= kTotal && s.find("\r\n0\r\n\r\n", s.size() - 7) != std::string::npos;
  });
  const auto rs = split_responses(out);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].body == std::string(kTotal, 's'));
  CHECK(f.streams[0]->refused == 0);
  CHECK(f.streams[0]->max_queued <= 64 * 1024 + 16 * 1024 + 16);  // high watermark + one piece
  CHECK(f.host.stats().bytes_dropped == 0);
  CHECK(peer.open());
}

TEST_CASE("A streaming handler that ignores writability runs into the cap (the contrast)",
          "[http][backpressure][stream][net]") {
  Fixture f(small_queue());
  Peer& peer = f.open();
  peer.send("GET /stream?n=4194304&rude=1 HTTP/1.1\r\n\r\n");
  f.host.poll();
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::error);  // errc::limit_reached
  CHECK(f.host.stats().bytes_dropped > 0);
}
