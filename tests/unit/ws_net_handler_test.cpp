// ws::NetHandler on real net::Connections driven by testing::Host (a manual
// clock, a socket pair): the upgrade from http::NetHandler with the bytes
// that followed the handshake, heartbeats on the ping / pong_timeout slots
// (closed exactly at interval + timeout, any frame is life), the close
// handshake and its timeout, protocol errors, EOF, drain, and shared frames
// with the slow-consumer policy (one buffer for every subscriber).
#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/testing/host.h>
#include <heartwheel/ws/net_handler.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "ws_harness.h"

using namespace std::chrono_literals;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;
namespace net = heartwheel::net;
namespace http = heartwheel::http;
namespace ws = heartwheel::ws;
using ws_test::client_close;
using ws_test::client_frame;
using ws_test::server_close;
using ws_test::server_frame;

namespace {

const std::string kHandshake =
    "GET /ws HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

// An application's own deadline kind (heartwheel/net/names.h), as
// heartwheel-chat's token expiry is.
constexpr net::Deadline kAppExpiry{31};
constexpr net::CloseReason kAppExpired{59};
constexpr net::CloseReasonName kAppReasons[] = {{kAppExpired, "app_expired"}};
constexpr net::DeadlineName kAppKinds[] = {{kAppExpiry, "app_expiry", kAppExpired}};
const net::NameRegistrar kAppNames{kAppReasons, kAppKinds};

// Echoes messages; remembers connections and how they ended.
struct EchoApp final : ws::Application {
  void on_message(ws::Connection& c, ws::MessageType t, std::string& m) override {
    if (t == ws::MessageType::text)
      (void)c.send_text(m);
    else
      (void)c.send_binary(m);
  }
  void on_close(ws::Connection& c, const ws::CloseInfo& info) override {
    closes.push_back(info);
    std::erase(open, &c);
  }
  net::DeadlineAction on_deadline(ws::Connection& c, net::DeadlineEvent event) override {
    deadlines.push_back(event.kind);
    if (close_code == 0) return net::DeadlineAction::close;
    (void)c.close(close_code, "token expired");
    return net::DeadlineAction::keep;
  }
  std::uint16_t close_code = 0;  // on_deadline: 0 lets the slot close TCP
  std::vector<net::Deadline> deadlines;
  std::vector<ws::Connection*> open;
  std::vector<ws::CloseInfo> closes;
};

ws::NetHandlerOptions timing(heartwheel::Duration ping, heartwheel::Duration pong,
                             heartwheel::Duration close = 2s) {
  ws::NetHandlerOptions o;
  o.ping_interval = ping;
  o.pong_timeout = pong;
  o.close_timeout = close;
  return o;
}

struct Fixture {
  explicit Fixture(ws::NetHandlerOptions o = timing(10s, 3s), net::ConnectionOptions c = {})
      : ws(std::move(o), app),
        http(http::SessionOptions{},
             [this](const http::Request& req, http::Responder r) {
               if (req.path() == "/ws")
                 ws.upgrade(req, std::move(r),
                            [this](ws::Connection& conn) { app.open.push_back(&conn); });
               else
                 r.respond(404, "not found\n");
             }),
        host(c) {}

  // Opens a connection and completes the handshake; `after` goes in the
  // same send as the request. Returns the peer; what followed the 101 is
  // left in `rest`.
  Peer& connect(const std::string& after = {}) {
    Peer& p = host.open(http);
    p.send(kHandshake + after);
    const std::string got = p.received();
    const auto end = got.find("\r\n\r\n");
    REQUIRE(end != std::string::npos);
    REQUIRE(got.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) == 0);
    REQUIRE(got.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") !=
            std::string::npos);
    rest = got.substr(end + 4);
    return p;
  }

  const ws::CloseInfo& last_close() {
    REQUIRE_FALSE(app.closes.empty());
    return app.closes.back();
  }

  // Handlers before the host: its destructor closes what is open.
  EchoApp app;
  ws::NetHandler ws;
  http::NetHandler http;
  Host host;
  std::string rest;
};

}  // namespace

TEST_CASE("The upgrade hands the frames sent with the handshake to the WebSocket session",
          "[ws][net][upgrade]") {
  Fixture f;
  Peer& peer = f.connect(client_frame(ws::Opcode::text, "first"));
  CHECK(f.rest == server_frame(ws::Opcode::text, "first"));  // echoed from the same read
  REQUIRE(f.app.open.size() == 1);
  CHECK(f.ws.connection_count() == 1);
  CHECK(f.http.session_count() == 0);
  peer.send(client_frame(ws::Opcode::binary, "second"));
  CHECK(peer.received() == server_frame(ws::Opcode::binary, "second"));
  CHECK(f.ws.stats().opened == 1);
  CHECK(f.ws.stats().messages_received == 2);
  CHECK(f.ws.stats().messages_sent == 2);
}

TEST_CASE("A refused handshake is answered and its connection closes", "[ws][net][upgrade]") {
  Fixture f;
  Peer& peer = f.host.open(f.http);
  std::string bad = kHandshake;
  bad.replace(bad.find("Sec-WebSocket-Version: 13"), 25, "Sec-WebSocket-Version: 8");
  peer.send(bad);
  const std::string got = peer.received();
  CHECK(got.rfind("HTTP/1.1 426 ", 0) == 0);
  CHECK(got.find("Sec-WebSocket-Version: 13\r\n") != std::string::npos);
  CHECK(got.find("Connection: close\r\n") != std::string::npos);
  f.host.run_for(1ms);
  CHECK_FALSE(peer.open());
  CHECK(f.ws.stats().handshakes_refused == 1);
  CHECK(f.app.open.empty());
  CHECK(f.app.closes.empty());  // never a WebSocket connection
}

TEST_CASE("The server pings every interval and a peer that answers stays open",
          "[ws][net][heartbeat]") {
  Fixture f(timing(10s, 3s));
  Peer& peer = f.connect();
  f.host.run_for(9999ms);
  CHECK(peer.received().empty());
  for (int i = 0; i < 5; ++i) {
    INFO("ping " << i);
    f.host.run_for(1ms);  // every 10 s from the hand-off
    CHECK(peer.received() == server_frame(ws::Opcode::ping, ""));
    f.host.run_for(2s);
    peer.send(client_frame(ws::Opcode::pong, ""));
    f.host.run_for(7999ms);
    CHECK(peer.received().empty());
  }
  CHECK(peer.open());
  CHECK(f.ws.stats().pings_sent == 5);
  CHECK(f.ws.stats().pongs_received == 5);
  CHECK(f.ws.stats().pong_timeouts == 0);
}

TEST_CASE("A silent peer is closed pong_timeout after the ping, with reason pong_timeout",
          "[ws][net][heartbeat]") {
  Fixture f(timing(10s, 3s));
  Peer& peer = f.connect();
  f.host.run_for(10s);  // the ping
  CHECK(peer.received() == server_frame(ws::Opcode::ping, ""));
  f.host.run_for(2999ms);
  REQUIRE(peer.open());
  f.host.run_for(1ms);  // interval + timeout after its last byte
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::pong_timeout);
  CHECK(f.last_close().code == ws::kCloseAbnormal);
  CHECK(f.last_close().reason == net::CloseReason::pong_timeout);
  CHECK(f.ws.stats().pong_timeouts == 1);
  CHECK(f.ws.stats().abnormal_closes == 1);
  CHECK(f.host.stats().closed(net::CloseReason::pong_timeout) == 1);
}

TEST_CASE("Any frame from the peer counts as life, not only a pong", "[ws][net][heartbeat]") {
  Fixture f(timing(10s, 3s));
  Peer& peer = f.connect();
  f.host.run_for(10s);
  CHECK(peer.received() == server_frame(ws::Opcode::ping, ""));
  f.host.run_for(2s);
  peer.send(client_frame(ws::Opcode::text, "busy, no pong"));  // a message instead of the pong
  CHECK(peer.received() == server_frame(ws::Opcode::text, "busy, no pong"));
  f.host.run_for(7999ms);  // the next ping is due at 20 s
  CHECK(peer.open());
  f.host.run_for(1ms);
  CHECK(peer.received() == server_frame(ws::Opcode::ping, ""));
  f.host.run_for(3s);  // this one goes unanswered
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::pong_timeout);
}

TEST_CASE("A close from the peer is echoed and ends the connection as protocol_close",
          "[ws][net][close]") {
  Fixture f;
  Peer& peer = f.connect();
  peer.send(client_close(4001, "bye"));
  CHECK(peer.received() == server_close(4001));
  f.host.run_for(1ms);
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::protocol_close);
  CHECK(f.last_close().code == 4001);
  CHECK(f.last_close().sent_code == 4001);
  CHECK(f.ws.stats().close_codes_received.at(4001) == 1);
  CHECK(f.ws.stats().close_codes_sent.at(4001) == 1);
}

TEST_CASE("A server close waits for the peer's answer, at most close_timeout", "[ws][net][close]") {
  Fixture f(timing(10s, 3s, 2s));
  SECTION("the peer answers") {
    Peer& peer = f.connect();
    REQUIRE_FALSE(f.app.open.at(0)->close(ws::kCloseNormal, "done"));
    CHECK(peer.received() ==
          server_frame(ws::Opcode::close, ws_test::bytes({0x03, 0xe8}) + "done"));
    f.host.run_for(1s);
    REQUIRE(peer.open());
    peer.send(client_close(ws::kCloseNormal));
    f.host.run_for(1ms);
    CHECK_FALSE(peer.open());
    CHECK(peer.close_reason() == net::CloseReason::protocol_close);
    CHECK(f.last_close().code == ws::kCloseNormal);
  }
  SECTION("the peer does not") {
    Peer& peer = f.connect();
    REQUIRE_FALSE(f.app.open.at(0)->close(ws::kCloseNormal));
    f.host.run_for(1999ms);
    REQUIRE(peer.open());
    f.host.run_for(1ms);
    CHECK_FALSE(peer.open());
    CHECK(peer.close_reason() == heartwheel::ws::close_reason::close_timeout);
    CHECK(f.ws.stats().close_timeouts == 1);
    CHECK(f.ws.stats().pings_sent == 0);  // no pings while the close handshake runs
  }
}

TEST_CASE("A kind the application set on the connection reaches Application::on_deadline",
          "[ws][net][close]") {
  Fixture f(timing(10s, 3s, 2s));
  Peer& peer = f.connect();
  net::Connection& conn = f.app.open.at(0)->net();
  SECTION("keep: the application closes with a code of its own") {
    f.app.close_code = 3000;
    conn.set_timeout(kAppExpiry, 1s);
    f.host.run_for(999ms);
    CHECK(f.app.deadlines.empty());
    f.host.run_for(1ms);
    REQUIRE(f.app.deadlines == std::vector<net::Deadline>{kAppExpiry});
    CHECK(peer.received() ==
          server_frame(ws::Opcode::close, ws_test::bytes({0x0b, 0xb8}) + "token expired"));
    peer.send(client_close(3000));
    f.host.run_for(1ms);
    CHECK_FALSE(peer.open());
    CHECK(f.last_close().code == 3000);
  }
  SECTION("close (the default): TCP closes with the slot's reason") {
    conn.set_timeout(kAppExpiry, 1s);
    f.host.run_for(1s);
    CHECK(f.app.deadlines.size() == 1);
    CHECK_FALSE(peer.open());
    CHECK(peer.close_reason() == kAppExpired);
  }
  SECTION("the layer's own slots do not reach it") {
    f.host.run_for(15s);  // a ping went out; the peer is silent: pong_timeout
    CHECK(f.app.deadlines.empty());
  }
}

TEST_CASE("Protocol errors close with the RFC code and reason protocol_error", "[ws][net][close]") {
  ws::NetHandlerOptions o = timing(10s, 3s);
  o.session.max_message_bytes = 1000;
  Fixture f(o);
  SECTION("an unmasked client frame: 1002") {
    Peer& peer = f.connect();
    ws_test::RawFrame unmasked{0x81, "x", false};
    peer.send(ws_test::encode_raw(unmasked));
    CHECK(peer.received() == server_close(ws::kCloseProtocolError));
    f.host.run_for(1ms);
    CHECK(peer.close_reason() == net::CloseReason::protocol_error);
    CHECK(f.last_close().sent_code == ws::kCloseProtocolError);
  }
  SECTION("a message over the limit: 1009 at its header") {
    Peer& peer = f.connect();
    const std::string big = client_frame(ws::Opcode::binary, std::string(1001, 'b'));
    peer.send(big.substr(0, 8));  // the header and mask only
    CHECK(peer.received() == server_close(ws::kCloseMessageTooBig));
    f.host.run_for(1ms);
    CHECK(peer.close_reason() == net::CloseReason::protocol_error);
  }
  CHECK(f.ws.stats().protocol_errors == 1);
}

TEST_CASE("EOF without a close frame is an abnormal close (1006)", "[ws][net][close]") {
  Fixture f;
  Peer& peer = f.connect();
  peer.shutdown_write();
  f.host.run_for(1ms);
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::peer_closed);
  CHECK(f.last_close().code == ws::kCloseAbnormal);
  CHECK(f.ws.stats().abnormal_closes == 1);
}

TEST_CASE("Drain sends 1001 and closes with reason drain once the peer answers",
          "[ws][net][close]") {
  Fixture f;
  Peer& peer = f.connect();
  f.ws.on_drain(*peer.connection());  // what net::Server::drain calls
  CHECK(peer.received() ==
        server_frame(ws::Opcode::close, ws_test::bytes({0x03, 0xe9}) + "server shutting down"));
  peer.send(client_close(ws::kCloseGoingAway));
  f.host.run_for(1ms);
  CHECK(peer.close_reason() == net::CloseReason::drain);
  CHECK(f.last_close().sent_code == ws::kCloseGoingAway);
}

namespace {
// A peer that stops reading: fill its socket with one large message.
void stop_reading(ws::Connection& c) {
  REQUIRE_FALSE(c.send_binary(std::string(4 << 20, 'f')));
  REQUIRE(c.net().queued_bytes() > 0);
}
}  // namespace

TEST_CASE("One shared frame reaches every connection by reference, one buffer for all",
          "[ws][net][shared]") {
  ws::NetHandlerOptions o = timing(10s, 3s);
  o.max_queued_bytes = 0;  // no slow-consumer limit here
  Fixture f(o);
  std::vector<Peer*> peers;
  for (int i = 0; i < 5; ++i) peers.push_back(&f.connect());
  for (ws::Connection* c : f.app.open) stop_reading(*c);
  const ws::SharedFrame frame = ws::encode_shared(ws::Opcode::text, std::string(1000, 'p'));
  for (ws::Connection* c : f.app.open) CHECK(c->deliver(frame) == ws::Delivery::sent);
  CHECK(frame.use_count() == 1 + 5);  // five queued references, no copy
  CHECK(f.ws.stats().shared_sent == 5);
}

TEST_CASE("A slow consumer is closed with reason slow_consumer under policy close, counted",
          "[ws][net][shared]") {
  ws::NetHandlerOptions o = timing(10s, 3s);
  o.max_queued_bytes = 64 * 1024;
  Fixture f(o);
  Peer& peer = f.connect();
  ws::Connection& c = *f.app.open.at(0);
  const ws::SharedFrame frame = ws::encode_shared(ws::Opcode::text, std::string(20000, 'p'));
  CHECK(c.deliver(frame) == ws::Delivery::sent);  // an empty queue always takes one
  stop_reading(c);
  CHECK(c.deliver(frame) == ws::Delivery::closed);
  CHECK(c.deliver(frame) == ws::Delivery::dropped);  // closing: counted, not sent
  f.host.run_for(1ms);
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::slow_consumer);
  CHECK(f.ws.stats().slow_consumer_closes == 1);
  CHECK(f.ws.stats().deliveries_dropped == 1);
  CHECK(f.last_close().reason == net::CloseReason::slow_consumer);
}

TEST_CASE("A slow consumer misses frames under policy skip, counted, and stays open",
          "[ws][net][shared]") {
  ws::NetHandlerOptions o = timing(10s, 3s);
  o.max_queued_bytes = 5 << 20;
  o.slow_consumer = ws::SlowConsumerPolicy::skip;
  Fixture f(o);
  Peer& peer = f.connect();
  ws::Connection& c = *f.app.open.at(0);
  stop_reading(c);
  const ws::SharedFrame frame = ws::encode_shared(ws::Opcode::binary, std::string(400000, 's'));
  int sent = 0, skipped = 0;
  for (int i = 0; i < 10; ++i) {
    const ws::Delivery d = c.deliver(frame);
    sent += d == ws::Delivery::sent ? 1 : 0;
    skipped += d == ws::Delivery::skipped ? 1 : 0;
  }
  CHECK(sent > 0);
  CHECK(skipped > 0);
  CHECK(sent + skipped == 10);
  CHECK(f.ws.stats().slow_consumer_skips == static_cast<std::uint64_t>(skipped));
  CHECK(c.net().queued_bytes() <= o.max_queued_bytes);
  CHECK(peer.open());
  CHECK(c.is_open());
}

namespace {
// A WebSocket subscriber, as the chat server has one per connection.
struct WsSubscriber final : heartwheel::pubsub::Subscriber {
  explicit WsSubscriber(ws::Connection& c) : conn(&c) {}
  heartwheel::pubsub::DeliveryOutcome on_publication(const heartwheel::pubsub::Publication&,
                                                     const heartwheel::pubsub::Frame& f) override {
    return conn->deliver(f) == ws::Delivery::sent ? heartwheel::pubsub::DeliveryOutcome::delivered
                                                  : heartwheel::pubsub::DeliveryOutcome::dropped;
  }
  ws::Connection* conn;
};
}  // namespace

TEST_CASE(
    "A publication to N WebSocket subscribers is encoded once and queued as N references "
    "to one buffer",
    "[ws][net][shared][pubsub]") {
  namespace pubsub = heartwheel::pubsub;
  constexpr int kSubscribers = 20;
  ws::NetHandlerOptions o = timing(10s, 3s);
  o.max_queued_bytes = 0;
  Fixture f(o);
  pubsub::Bus bus;
  int encodes = 0;
  pubsub::Frame encoded;  // the hub's frame, kept to compare against
  pubsub::HubOptions ho;  // no loop: the test polls the inbox
  ho.encode_publication = [&](const pubsub::Publication& p) {
    ++encodes;
    encoded = ws::encode_shared(ws::Opcode::text, p.data);
    return encoded;
  };
  pubsub::Hub hub(bus, ho);
  std::vector<std::unique_ptr<WsSubscriber>> subscribers;
  for (int i = 0; i < kSubscribers; ++i) {
    f.connect();
    ws::Connection& c = *f.app.open.back();
    stop_reading(c);  // so every copy would have to wait in the queue
    subscribers.push_back(std::make_unique<WsSubscriber>(c));
    REQUIRE_FALSE(hub.subscribe(*subscribers.back(), "room").error);
  }
  REQUIRE_FALSE(hub.publish("room", std::string(64 * 1024, 'p')).error);
  REQUIRE(hub.poll() == 1);
  CHECK(encodes == 1);
  CHECK(hub.stats().delivery.deliveries == kSubscribers);
  // Every connection queued the same bytes: one buffer, kSubscribers
  // references to it (plus ours), none copied.
  CHECK(encoded.use_count() == 1 + kSubscribers);
  for (ws::Connection* c : f.app.open) CHECK(c->net().queued_bytes() > encoded->size());
  for (auto& s : subscribers) hub.unsubscribe_all(*s);
}

TEST_CASE(
    "A peer that pings and never reads makes the server queue no pong per ping, the latest is "
    "answered once the queue empties",
    "[ws][net][pong]") {
  net::ConnectionOptions keep_reading;  // as the chat server: pings are read while unwritable
  keep_reading.write.slow_reader = net::SlowReaderPolicy::close;
  Fixture f(timing(10s, 3s), keep_reading);
  Peer& peer = f.connect();
  ws::Connection& c = *f.app.open.at(0);
  stop_reading(c);  // 4 MiB waiting for the peer
  const std::size_t queued = c.net().queued_bytes();
  std::string pings;
  for (int i = 0; i < 1000; ++i) pings += client_frame(ws::Opcode::ping, std::string(125, 'p'));
  pings += client_frame(ws::Opcode::ping, "last");
  peer.send(pings);
  // Before: 1001 pongs of 127 bytes each, queued behind the 4 MiB.
  CHECK(c.net().queued_bytes() <= queued);
  CHECK(f.ws.stats().pings_received == 1001);
  CHECK(f.ws.stats().pongs_folded == 1000);
  const std::string got = peer.received();
  const std::string pong = server_frame(ws::Opcode::pong, "last");
  REQUIRE(got.size() > pong.size());
  CHECK(got.substr(got.size() - pong.size()) == pong);
  CHECK(got.size() ==
        server_frame(ws::Opcode::binary, std::string(4 << 20, 'f')).size() + pong.size());
  CHECK(c.net().queued_bytes() == 0);
  // Reading again: every ping answered at once.
  peer.send(client_frame(ws::Opcode::ping, "at once"));
  CHECK(peer.received() == server_frame(ws::Opcode::pong, "at once"));
  CHECK(peer.open());
}

TEST_CASE(
    "A message sent to a peer whose queue is past max_queued_bytes closes it as slow_consumer",
    "[ws][net][limits]") {
  ws::NetHandlerOptions o = timing(10s, 3s);
  o.max_queued_bytes = 64 * 1024;
  net::ConnectionOptions keep_reading;
  keep_reading.write.slow_reader = net::SlowReaderPolicy::close;
  Fixture f(o, keep_reading);
  Peer& peer = f.connect();
  ws::Connection& c = *f.app.open.at(0);
  stop_reading(c);  // an empty queue always takes a message, however large
  // An echo (the EchoApp's reply) is a message of the connection's own: it
  // cannot be skipped, so the connection goes.
  peer.send(client_frame(ws::Opcode::text, "echo me"));
  f.host.run_for(1ms);
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::slow_consumer);
  CHECK(f.ws.stats().slow_consumer_closes == 1);
  CHECK(f.ws.stats().messages_sent == 1);  // stop_reading's
}

TEST_CASE("A message that arrives after the server's close is not delivered, and counted",
          "[ws][net][close]") {
  Fixture f(timing(10s, 3s, 2s));
  Peer& peer = f.connect();
  REQUIRE_FALSE(f.app.open.at(0)->close(3000, "token expired"));
  CHECK(peer.received() ==
        server_frame(ws::Opcode::close, ws_test::bytes({0x0b, 0xb8}) + "token expired"));
  peer.send(client_frame(ws::Opcode::text, "publish after the close") +
            client_frame(ws::Opcode::ping, "still there?"));
  CHECK(peer.received().empty());  // no echo, no pong
  CHECK(f.ws.stats().messages_received == 0);
  CHECK(f.ws.stats().messages_after_close == 1);
  peer.send(client_close(3000));
  f.host.run_for(1ms);
  CHECK_FALSE(peer.open());
  CHECK(peer.close_reason() == net::CloseReason::protocol_close);
}
