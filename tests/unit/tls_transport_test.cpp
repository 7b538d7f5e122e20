// TLS as net's byte stage (tls/net_transport.h, net/byte_stage.h) on
// the testing host's virtual clock: the application sees a connection only
// once its handshake is done; a silent or half-hello peer is closed by the
// handshake deadline exactly at its timeout; plain HTTP is refused and
// counted; data goes both ways encrypted; a polite close sends
// close_notify; PROXY header first, then TLS.
#include <heartwheel/net/proxy_protocol.h>
#include <heartwheel/testing/host.h>
#include <heartwheel/tls/net_transport.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "tls_support.h"

using namespace std::chrono_literals;
using namespace heartwheel;
using namespace tls_test;

namespace {

struct App : net::Handler {
  int opened = 0, closed = 0, eofs = 0;
  std::string data;
  bool close_after_reply = false;
  void on_open(net::Connection&) override { ++opened; }
  void on_data(net::Connection& c, std::string_view d) override {
    data += d;
    c.write(d);
    if (close_after_reply) c.close_after_flush();
  }
  void on_eof(net::Connection& c) override {
    ++eofs;
    c.close(net::CloseReason::peer_closed);
  }
  void on_close(net::Connection&, net::CloseReason, std::error_code) override { ++closed; }
};

std::uint64_t closed_as(const testing::Host& host, net::CloseReason r) {
  return host.stats().closed_by_reason[static_cast<std::size_t>(r)];
}

struct Fixture {
  App app;  // before the host: the host calls on_close
  testing::Host host;
  tls::Context server{server_options(certs().ec_one)};
  tls::Context client{client_options(certs().ec_one.certificate)};
  explicit Fixture(Duration timeout = 10s) {
    host.set_transport(tls::server_transport(
        std::shared_ptr<tls::Context>(&server, [](tls::Context*) {}), {.handshake_timeout = timeout}));
  }
  // A client session on `peer`: the ClientHello sent, answers pumped until
  // established (or failed).
  End handshake(testing::Peer& peer) { return handshake(peer, client); }
  End handshake(testing::Peer& peer, const tls::Context& with, std::string_view resume_key = {}) {
    End c(tls::Session::client(with, "localhost", resume_key));
    REQUIRE(c.session.start(c.out));
    for (int i = 0; i < 8 && !c.out.empty(); ++i) {
      peer.send(std::exchange(c.out, {}));
      host.poll();
      deliver(c, peer.received());
    }
    return c;
  }
  std::string roundtrip(testing::Peer& peer, End& c, std::string_view text) {
    REQUIRE_FALSE(c.session.write(text, c.out));
    peer.send(std::exchange(c.out, {}));
    host.poll();
    c.received.clear();
    deliver(c, peer.received());
    return c.received;
  }
};

}  // namespace

TEST_CASE("The handler gets on_open after the handshake and plaintext both ways", "[tls][net]") {
  Fixture f;
  auto& peer = f.host.open(f.app);
  CHECK(f.app.opened == 0);
  REQUIRE(peer.connection()->in_byte_stage());
  End c = f.handshake(peer);
  REQUIRE(c.session.established());
  CHECK(f.app.opened == 1);
  CHECK_FALSE(peer.connection()->in_byte_stage());
  CHECK(f.roundtrip(peer, c, "hello") == "hello");
  CHECK(f.app.data == "hello");
  // A write larger than a record and than the plaintext buffer: in pieces.
  const std::string big(200000, 'x');
  REQUIRE_FALSE(c.session.write(big, c.out));
  peer.send(std::exchange(c.out, {}));
  std::string echoed;
  for (int i = 0; i < 50 && echoed.size() < big.size(); ++i) {
    f.host.poll();
    c.received.clear();
    deliver(c, peer.received());
    echoed += c.received;
  }
  CHECK(echoed == big);
  // The handshake deadline was cleared: nothing closes it at 10 s.
  f.host.run_for(30s);
  CHECK(peer.open());
}

TEST_CASE("Completed handshakes are counted, resumed ones apart, failed ones not",
          "[tls][net][stats]") {
  Fixture f;
  auto options = client_options(certs().ec_one.certificate);
  options.client_session_cache = true;
  const tls::Context resuming{options};
  const auto& stats = f.host.stats();
  auto& first = f.host.open(f.app);
  End a = f.handshake(first, resuming, "srv");
  REQUIRE(a.session.established());
  CHECK_FALSE(a.session.resumed());
  CHECK(stats.handshakes_completed == 1);
  CHECK(stats.handshakes_resumed == 0);
  // The ticket of the first came back with its handshake: the second resumes.
  auto& second = f.host.open(f.app);
  End b = f.handshake(second, resuming, "srv");
  REQUIRE(b.session.established());
  REQUIRE(b.session.resumed());
  CHECK(stats.handshakes_completed == 2);
  CHECK(stats.handshakes_resumed == 1);
  // A refused handshake counts as its close reason only.
  auto& plain = f.host.open(f.app);
  plain.send("GET / HTTP/1.1\r\n\r\n");
  f.host.poll();
  CHECK(closed_as(f.host, tls::close_reason::tls_protocol_error) == 1);
  CHECK(stats.handshakes_completed == 2);
  CHECK(stats.handshakes_resumed == 1);
}

TEST_CASE("The tickets go out in front of the answer to a request sent with the client's Finished",
          "[tls][net][resume]") {
  // The server holds its handshake's last flight (the ticket) until the
  // handler's first write of the same read: both, and a close_notify
  // after them, must reach the client in record order.
  Fixture f;
  f.app.close_after_reply = GENERATE(false, true);
  CAPTURE(f.app.close_after_reply);
  auto options = client_options(certs().ec_one.certificate);
  options.client_session_cache = true;
  const tls::Context resuming{options};
  auto& peer = f.host.open(f.app);
  End c(tls::Session::client(resuming, "localhost", "srv"));
  REQUIRE(c.session.start(c.out));
  for (int i = 0; i < 8 && !c.session.established(); ++i) {
    peer.send(std::exchange(c.out, {}));
    f.host.poll();
    deliver(c, peer.received());
  }
  REQUIRE(c.session.established());
  REQUIRE_FALSE(c.out.empty());  // the client's Finished, not sent yet
  REQUIRE_FALSE(c.session.write("hello", c.out));
  peer.send(std::exchange(c.out, {}));  // Finished and request: one read
  f.host.poll();
  CHECK(f.app.opened == 1);
  CHECK(f.app.data == "hello");
  deliver(c, peer.received());
  CHECK(c.failures == 0);
  CHECK(c.received == "hello");
  CHECK(c.peer_closes == (f.app.close_after_reply ? 1 : 0));
  // The ticket came with the answer: the next connection resumes.
  auto& second = f.host.open(f.app);
  End b = f.handshake(second, resuming, "srv");
  REQUIRE(b.session.established());
  CHECK(b.session.resumed());
  CHECK(f.roundtrip(second, b, "again") == "again");
}

TEST_CASE("A silent peer and a half ClientHello are closed at the handshake timeout, not before",
          "[tls][net]") {
  Fixture f(10s);
  auto& silent = f.host.open(f.app);
  auto& half = f.host.open(f.app);
  End c(tls::Session::client(f.client, "localhost"));
  REQUIRE(c.session.start(c.out));
  half.send(c.out.substr(0, c.out.size() / 2));
  f.host.run_for(10s - 1ms);
  CHECK(silent.open());
  CHECK(half.open());
  f.host.run_for(1ms);
  CHECK_FALSE(silent.open());
  CHECK_FALSE(half.open());
  CHECK(silent.close_reason() == tls::close_reason::tls_handshake_timeout);
  CHECK(closed_as(f.host, tls::close_reason::tls_handshake_timeout) == 2);
  CHECK(f.host.stats().idle_events[static_cast<std::size_t>(tls::deadline::tls_handshake_timeout)] ==
        2);
  CHECK(f.app.opened == 0);
  CHECK(f.app.closed == 0);  // never seen by the application
}

TEST_CASE("Plain HTTP to the TLS port is closed as tls_protocol_error, unseen", "[tls][net]") {
  Fixture f;
  auto& peer = f.host.open(f.app);
  peer.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  f.host.poll();
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == tls::close_reason::tls_protocol_error);
  CHECK(closed_as(f.host, tls::close_reason::tls_protocol_error) == 1);
  CHECK(f.app.opened == 0);
  CHECK(f.app.closed == 0);
}

TEST_CASE("A polite close sends close_notify, and the peer's close_notify is on_eof", "[tls][net]") {
  Fixture f;
  SECTION("close_after_flush") {
    auto& peer = f.host.open(f.app);
    End c = f.handshake(peer);
    REQUIRE(c.session.established());
    f.app.close_after_reply = true;
    CHECK(f.roundtrip(peer, c, "bye") == "bye");
    CHECK(c.peer_closes == 1);  // the server's close_notify came after the reply
    CHECK_FALSE(peer.open());
    CHECK(f.app.closed == 1);
  }
  SECTION("the peer's close_notify") {
    auto& peer = f.host.open(f.app);
    End c = f.handshake(peer);
    REQUIRE(c.session.established());
    c.session.close(c.out);
    peer.send(std::exchange(c.out, {}));
    f.host.poll();
    CHECK(f.app.eofs == 1);
    CHECK_FALSE(peer.open());
    CHECK(peer.close_reason() == net::CloseReason::peer_closed);
    deliver(c, peer.received());
    CHECK(c.peer_closes == 1);  // close() that is not a reset answers with close_notify
  }
}

TEST_CASE("The PROXY header comes first, then the TLS handshake", "[tls][net][proxy]") {
  Fixture f;
  f.host.set_proxy_protocol(3s);
  auto& peer = f.host.open(f.app);
  REQUIRE(peer.connection()->in_proxy_stage());
  peer.send("PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\n");
  CHECK_FALSE(peer.connection()->in_proxy_stage());
  CHECK(peer.connection()->in_byte_stage());
  End c = f.handshake(peer);
  REQUIRE(c.session.established());
  CHECK(f.app.opened == 1);
  CHECK(peer.connection()->peer_address() == "192.0.2.7:56324");
  CHECK(f.roundtrip(peer, c, "behind a proxy") == "behind a proxy");
}
