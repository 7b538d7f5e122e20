// A connection's PROXY protocol stage (connection.h, "PROXY protocol"), on
// the testing host's virtual clock: the handler sees the connection only
// once its header is complete, with the header's addresses and TLVs and the
// bytes that followed it; timeouts, malformed and cut-short headers close it
// unseen and are counted.
#include <heartwheel/net/proxy_protocol.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <string>

#include "proxy_headers.h"

using namespace std::chrono_literals;
using namespace heartwheel;
using namespace proxytest;
using net::CloseReason;

namespace {

// Records what the application sees: on_open with the peer's address, the
// bytes, the close; echoes the bytes.
struct App : net::Handler {
  int opened = 0, closed = 0;
  std::string peer, local, data;
  const net::ProxyHeader* header = nullptr;
  bool pause_on_open = false;
  void on_open(net::Connection& c) override {
    ++opened;
    peer = c.peer_address();
    local = c.local_address();
    header = c.proxy_header();
    if (pause_on_open) c.pause_reading();
  }
  void on_data(net::Connection& c, std::string_view d) override {
    data += d;
    c.write(d);
  }
  void on_close(net::Connection&, CloseReason, std::error_code) override { ++closed; }
};

struct Fixture {
  App app;  // before the host: the host calls on_close
  testing::Host host;
  Fixture() { host.set_proxy_protocol(3s); }
};

}  // namespace

TEST_CASE("A v1 header is read before on_open and the bytes behind it reach on_data",
          "[net][proxy]") {
  Fixture f;
  auto& peer = f.host.open(f.app);
  CHECK(f.app.opened == 0);
  REQUIRE(peer.connection()->in_proxy_stage());
  peer.send("PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\nhello");
  CHECK(f.app.opened == 1);
  CHECK(f.app.peer == "192.0.2.7:56324");
  CHECK(f.app.local == "198.51.100.1:443");
  CHECK(f.app.data == "hello");
  CHECK(peer.received() == "hello");  // the echo: the header itself is never echoed
  CHECK_FALSE(peer.connection()->in_proxy_stage());
  REQUIRE(f.app.header != nullptr);
  CHECK(f.app.header->version == 1);
  CHECK(f.host.stats().proxy.v1 == 1);
  peer.send("more");
  CHECK(peer.received() == "more");
}

TEST_CASE("A v2 header split byte by byte gives the handler its addresses and TLVs",
          "[net][proxy]") {
  Fixture f;
  auto& peer = f.host.open(f.app);
  V2 v2;
  v2.block = ipv4_block("203.0.113.9", "192.0.2.80", 40000, 8080) + tlv(0x01, "h2") +
             tlv(0x02, "example.com") + tlv(0x05, "req-42") +
             tlv(0x20, std::string("\x01\x00\x00\x00\x00", 5) + tlv(0x21, "TLSv1.3"));
  v2.crc = true;
  const std::string header = v2.build();
  for (char byte : header) {
    CHECK(f.app.opened == 0);
    peer.send(std::string(1, byte));
  }
  REQUIRE(f.app.opened == 1);
  CHECK(f.app.peer == "203.0.113.9:40000");
  const net::ProxyHeader* h = peer.connection()->proxy_header();
  REQUIRE(h != nullptr);
  CHECK(h->version == 2);
  CHECK(h->alpn == "h2");
  CHECK(h->authority == "example.com");
  CHECK(h->unique_id == "req-42");
  REQUIRE(h->ssl.has_value());
  CHECK(h->ssl->version == "TLSv1.3");
  CHECK(h->crc32c.has_value());
  sockaddr_storage ss{};
  REQUIRE(peer.connection()->peer_sockaddr(ss));
  CHECK(ss.ss_family == AF_INET);
  CHECK(f.host.stats().proxy.v2 == 1);
  peer.send("x");
  CHECK(f.app.data == "x");
}

TEST_CASE("A v2 LOCAL header keeps the socket's own addresses and counts as local",
          "[net][proxy]") {
  Fixture f;
  auto& peer = f.host.open(f.app);
  const std::string socket_peer = peer.connection()->peer_address();
  V2 local;
  local.ver_cmd = 0x20;
  local.fam = 0x00;
  peer.send(local.build() + "ping");
  REQUIRE(f.app.opened == 1);
  CHECK(f.app.peer == socket_peer);  // the socket pair's (empty for an unnamed AF_UNIX peer)
  REQUIRE(f.app.header != nullptr);
  CHECK(f.app.header->command == net::ProxyCommand::local);
  CHECK(f.app.data == "ping");
  CHECK(f.host.stats().proxy.local == 1);
  CHECK(f.host.stats().proxy.v2 == 1);
}

TEST_CASE("A missing PROXY header closes the connection unseen after the header timeout",
          "[net][proxy]") {
  Fixture f;
  auto& peer = f.host.open(f.app);
  peer.send("PROXY TCP4 192.0.2.7");  // and then nothing
  f.host.run_for(2999ms);
  CHECK(peer.open());
  f.host.run_for(1ms);
  CHECK(peer.close_reason() == CloseReason::proxy_header_timeout);
  CHECK(f.app.opened == 0);
  CHECK(f.app.closed == 0);  // the application never heard of it
  CHECK(f.host.stats().proxy.timeouts == 1);
  CHECK(f.host.stats().closed(CloseReason::proxy_header_timeout) == 1);
}

TEST_CASE("Bytes that are not a PROXY header close the connection as invalid at once",
          "[net][proxy]") {
  Fixture f;
  auto& peer = f.host.open(f.app);
  peer.send("GET / HTTP/1.1\r\n\r\n");  // never guessed: a header is required
  CHECK(peer.close_reason() == CloseReason::proxy_header_invalid);
  auto& bad_v1 = f.host.open(f.app);
  bad_v1.send("PROXY TCP4 192.0.2.7  198.51.100.1 1 2\r\n");  // two spaces
  CHECK(bad_v1.close_reason() == CloseReason::proxy_header_invalid);
  CHECK(f.app.opened == 0);
  CHECK(f.app.closed == 0);
  CHECK(f.host.stats().proxy.invalid == 2);
  CHECK(f.host.stats().closed(CloseReason::proxy_header_invalid) == 2);
}

TEST_CASE("A FIN inside the header is invalid and a FIN before any byte is peer_closed",
          "[net][proxy]") {
  Fixture f;
  auto& cut = f.host.open(f.app);
  cut.send("PROXY TCP4 192.0.2.7 198.51.100.1 ");
  cut.shutdown_write();
  CHECK(cut.close_reason() == CloseReason::proxy_header_invalid);
  auto& silent = f.host.open(f.app);
  silent.shutdown_write();  // a plain TCP health check: connect, close
  CHECK(silent.close_reason() == CloseReason::peer_closed);
  CHECK(f.host.stats().proxy.invalid == 1);
  CHECK(f.app.closed == 0);
}

TEST_CASE("Bytes behind the header reach on_data even when on_open paused reading",
          "[net][proxy]") {
  Fixture f;
  f.app.pause_on_open = true;
  auto& peer = f.host.open(f.app);
  peer.send("PROXY TCP6 2001:db8::1 2001:db8::2 1000 2000\r\nearly");
  CHECK(f.app.peer == "[2001:db8::1]:1000");
  CHECK(f.app.data == "early");  // read with the header: delivered once, in order
  peer.send("later");
  CHECK(f.app.data == "early");  // paused now
  peer.connection()->resume_reading();
  f.host.poll();
  CHECK(f.app.data == "earlylater");
}

TEST_CASE("The header timeout is the proxy_header_timeout deadline and idle slots still run",
          "[net][proxy]") {
  App app;
  net::ConnectionOptions options;
  options.idle.read_idle = 1s;
  testing::Host host(options);
  host.set_proxy_protocol(10s);
  auto& peer = host.open(app);
  CHECK(peer.connection()->deadline(net::Deadline::proxy_header_timeout) == host.now() + 10s);
  host.run_for(1s);  // read idle is shorter than the header timeout
  CHECK(peer.close_reason() == CloseReason::read_idle);
  CHECK(app.closed == 0);
  auto& ok = host.open(app);
  ok.send("PROXY UNKNOWN\r\n");
  CHECK(ok.connection()->deadline(net::Deadline::proxy_header_timeout) == kNever);  // cleared
  CHECK(app.opened == 1);
}

TEST_CASE("A header without TLVs is kept compact and made whole when a handler asks for it",
          "[net][proxy]") {
  struct Quiet : net::Handler {  // never calls proxy_header() itself
    std::string peer;
    void on_open(net::Connection& c) override { peer = c.peer_address(); }
    void on_data(net::Connection&, std::string_view) override {}
  } quiet;
  testing::Host host;
  host.set_proxy_protocol(3s);
  auto& peer = host.open(quiet);
  peer.send("PROXY TCP6 2001:db8::7 2001:db8::8 4000 443\r\n");
  CHECK(quiet.peer == "[2001:db8::7]:4000");
  CHECK(peer.connection()->local_address() == "[2001:db8::8]:443");
  const net::ProxyHeader* h = peer.connection()->proxy_header();
  REQUIRE(h != nullptr);
  CHECK(h->version == 1);
  CHECK(h->family == AF_INET6);
  CHECK(h->source_text() == "[2001:db8::7]:4000");
  CHECK(h->destination_text() == "[2001:db8::8]:443");
  CHECK(h->tlvs.empty());
  CHECK(peer.connection()->proxy_header() == h);  // made once
}

TEST_CASE("A v2 header with UNIX addresses gives them as the peer and local addresses",
          "[net][proxy]") {
  App app;
  testing::Host host;
  host.set_proxy_protocol(3s);
  auto& peer = host.open(app);
  V2 v2;
  v2.fam = 0x31;  // AF_UNIX, stream
  v2.block = unix_block("/run/client.sock", "/run/server.sock");
  peer.send(v2.build());
  REQUIRE(app.opened == 1);
  CHECK(app.peer == "unix:/run/client.sock");
  CHECK(app.local == "unix:/run/server.sock");
  REQUIRE(app.header != nullptr);
  CHECK(app.header->family == AF_UNIX);
}

TEST_CASE("A peer the host does not trust is reset at once as proxy_untrusted, header or not",
          "[net][proxy][trust]") {
  Fixture f;
  int asked = 0;
  sa_family_t family = AF_UNSPEC;
  f.host.set_proxy_trust([&](const sockaddr& peer) {
    ++asked;
    family = peer.sa_family;
    return false;
  });
  // Refused at accept, before a byte is read: a header it would send is
  // never parsed (no parser is made), and one that sends none fares the same.
  auto& first = f.host.open(f.app);
  CHECK(asked == 1);
  CHECK(family == AF_UNIX);  // the socket's own peer, never a header's address
  CHECK_FALSE(first.open());
  CHECK(first.close_reason() == CloseReason::proxy_untrusted);
  CHECK(first.received().empty());
  auto& second = f.host.open(f.app);
  CHECK(second.close_reason() == CloseReason::proxy_untrusted);
  CHECK(f.app.opened == 0);
  CHECK(f.app.closed == 0);  // the application never heard of either
  CHECK(f.host.stats().proxy.untrusted == 2);
  CHECK(f.host.stats().proxy.v1 == 0);
  CHECK(f.host.stats().closed(CloseReason::proxy_untrusted) == 2);
}

TEST_CASE("A trusted peer's header is believed as before and the check runs once",
          "[net][proxy][trust]") {
  Fixture f;
  int asked = 0;
  f.host.set_proxy_trust([&](const sockaddr& peer) {
    ++asked;
    return peer.sa_family == AF_UNIX;
  });
  auto& peer = f.host.open(f.app);
  REQUIRE(peer.connection()->in_proxy_stage());
  peer.send("PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\nhello");
  CHECK(f.app.opened == 1);
  CHECK(f.app.peer == "192.0.2.7:56324");
  CHECK(peer.received() == "hello");
  CHECK(asked == 1);
  CHECK(f.host.stats().proxy.untrusted == 0);
}
