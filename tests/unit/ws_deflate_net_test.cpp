// ws::NetHandler with permessage-deflate on real net::Connections
// (testing::Host): the offer answered in the 101, messages compressed both
// ways, a publication fanned out through a pubsub::Hub compressed once for
// every subscriber that agreed (one deflate call, one buffer queued by
// reference) while the others get the plain frame, and a bomb closed 1009.
#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/testing/host.h>
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/net_handler.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "ws_harness.h"

using namespace std::chrono_literals;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;
namespace http = heartwheel::http;
namespace pubsub = heartwheel::pubsub;
namespace ws = heartwheel::ws;
using ws_test::client_frame;

namespace {

std::string handshake(const std::string& extensions) {
  std::string r =
      "GET /ws HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
  if (!extensions.empty()) r += "Sec-WebSocket-Extensions: " + extensions + "\r\n";
  return r + "\r\n";
}

struct EchoApp final : ws::Application {
  void on_message(ws::Connection& c, ws::MessageType t, std::string& m) override {
    (void)(t == ws::MessageType::text ? c.send_text(m) : c.send_binary(m));
  }
  void on_close(ws::Connection&, const ws::CloseInfo& info) override { closes.push_back(info); }
  std::vector<ws::Connection*> open;
  std::vector<ws::CloseInfo> closes;
};

ws::NetHandlerOptions compressing() {
  ws::NetHandlerOptions o;
  o.ping_interval = 0s;
  o.max_queued_bytes = 0;
  o.handshake.deflate.enabled = true;
  return o;
}

struct Fixture {
  explicit Fixture(ws::NetHandlerOptions o = compressing())
      : ws(std::move(o), app),
        http(http::SessionOptions{}, [this](const http::Request& req, http::Responder r) {
          ws.upgrade(req, std::move(r), [this](ws::Connection& c) { app.open.push_back(&c); });
        }) {}

  // The handshake with `extensions` offered; returns the peer and the 101's
  // headers in `head`.
  Peer& connect(const std::string& extensions) {
    Peer& p = host.open(http);
    p.send(handshake(extensions));
    const std::string got = p.received();
    const auto end = got.find("\r\n\r\n");
    REQUIRE(end != std::string::npos);
    REQUIRE(got.rfind("HTTP/1.1 101 ", 0) == 0);
    head = got.substr(0, end + 4);
    return p;
  }

  EchoApp app;
  ws::NetHandler ws;
  http::NetHandler http;
  Host host;
  std::string head;
};

std::string json(std::size_t bytes) {
  std::string s = "{\"items\":[";
  for (int i = 0; s.size() < bytes; ++i)
    s += "{\"user\":\"u" + std::to_string(i % 17) +
         "\",\"text\":\"hello there\",\"n\":" + std::to_string(i) + "},";
  s.back() = ']';
  return s + "}";
}

// Reads server frames with a client session that agreed on compression.
struct Reader final : ws::SessionOwner {
  Reader() : pool(deflate_on()), session(*this, options) {
    ws::DeflateParams p;
    p.enabled = p.server_no_context_takeover = p.client_no_context_takeover = true;
    session.use_deflate(p);
  }
  static ws::DeflateOptions deflate_on() {
    ws::DeflateOptions o;
    o.enabled = true;
    return o;
  }
  static ws::SessionOptions client() {
    ws::SessionOptions o;
    o.role = ws::Role::client;
    o.max_message_bytes = 1 << 24;
    return o;
  }
  void send(std::string_view, std::string_view) override {}
  void close() override {}
  ws::DeflatePool* deflate_pool() noexcept override { return &pool; }
  void on_message(ws::Session&, ws::MessageType, std::string& m) override { messages.push_back(m); }
  ws::DeflatePool pool;
  ws::SessionOptions options = client();
  ws::Session session;
  std::vector<std::string> messages;
};

std::string compressed(std::string_view payload) {
  ws::DeflatePool pool(Reader::deflate_on());
  std::string out;
  pool.compress(payload, out);
  return out;
}

struct Subscriber final : pubsub::Subscriber {
  explicit Subscriber(ws::Connection& c) : conn(&c) {}
  pubsub::DeliveryOutcome on_publication(const pubsub::Publication&,
                                         const pubsub::Frame& f) override {
    return conn->deliver(f) == ws::Delivery::sent ? pubsub::DeliveryOutcome::delivered
                                                  : pubsub::DeliveryOutcome::dropped;
  }
  ws::Connection* conn;
};

}  // namespace

TEST_CASE("The 101 answers a browser's deflate offer and messages go compressed both ways",
          "[ws][net][deflate]") {
  Fixture f;
  Peer& p = f.connect("permessage-deflate; client_max_window_bits");
  CHECK(f.head.find("\r\nSec-WebSocket-Extensions: permessage-deflate; "
                    "server_no_context_takeover; client_no_context_takeover\r\n") !=
        std::string::npos);
  const std::string message = json(3000);
  p.send(client_frame(ws::Opcode::text, compressed(message), true, 0x4));
  const std::string echo = p.received();
  REQUIRE_FALSE(echo.empty());
  CHECK(static_cast<std::uint8_t>(echo[0]) == 0xC1);  // FIN | RSV1 | text
  CHECK(echo.size() < message.size() / 3);
  Reader r;
  r.session.feed(echo);
  CHECK(r.messages == std::vector<std::string>{message});
  const ws::Stats& s = f.ws.stats();
  CHECK(s.compression_negotiated == 1);
  CHECK(s.compressed_messages_received == 1);
  CHECK(s.compressed_messages_sent == 1);
  CHECK(s.compressed_received_uncompressed_bytes == message.size());
  CHECK(f.ws.deflate_pool()->lent_inflaters() == 0);
  // A client that offers nothing gets nothing.
  f.connect("");
  CHECK(f.head.find("Extensions") == std::string::npos);
  CHECK(f.ws.stats().compression_negotiated == 1);
}

TEST_CASE(
    "A publication to N compressing subscribers is deflated once per loop and queued as N "
    "references to one compressed buffer, the others the plain frame",
    "[ws][net][deflate][pubsub]") {
  constexpr int kCompressing = 6;
  constexpr int kPlain = 2;
  constexpr std::size_t kFiller = 4 << 20;  // fills the socket: the frames then queue
  Fixture f;
  pubsub::Bus bus;
  pubsub::Frame encoded;
  pubsub::HubOptions ho;  // no loop: the test polls the inbox
  ho.encode_publication = [&](const pubsub::Publication& pub) {
    return encoded = ws::encode_shared(ws::Opcode::text, pub.data);
  };
  pubsub::Hub hub(bus, ho);
  std::vector<Peer*> peers;
  std::vector<std::unique_ptr<Subscriber>> subscribers;
  for (int i = 0; i < kCompressing + kPlain; ++i) {
    peers.push_back(&f.connect(i < kCompressing ? "permessage-deflate" : ""));
    ws::Connection& c = *f.app.open.back();
    REQUIRE_FALSE(c.net().write(std::string(kFiller, 'f')));  // raw bytes, not a frame
    REQUIRE(c.net().queued_bytes() > 0);
    subscribers.push_back(std::make_unique<Subscriber>(c));
    REQUIRE_FALSE(hub.subscribe(*subscribers.back(), "room").error);
  }
  const std::string data = json(1024);
  for (int publication = 1; publication <= 3; ++publication) {
    REQUIRE_FALSE(hub.publish("room", data).error);
    REQUIRE(hub.poll() == 1);
    CHECK(f.ws.stats().deflate_calls == static_cast<std::uint64_t>(publication));
  }
  const ws::Stats& s = f.ws.stats();
  CHECK(s.compressed_messages_sent == 3 * kCompressing);
  CHECK(s.shared_sent == 3 * (kCompressing + kPlain));
  // The last publication's compressed form, as the pool remembers it
  // (looked up, not deflated again): one buffer, queued by every compressing
  // connection; the plain frame queued by the others.
  const ws::SharedFrame compressed_frame = f.ws.deflate_pool()->shared(encoded, 15);
  CHECK(f.ws.stats().deflate_calls == 3);
  REQUIRE(compressed_frame != encoded);
  CHECK(compressed_frame->size() < encoded->size() / 3);
  CHECK(compressed_frame.use_count() == 2 + kCompressing);  // + ours + the pool's
  CHECK(encoded.use_count() == 2 + kPlain);
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const std::string got = peers[i]->received();
    REQUIRE(got.size() > kFiller);
    const std::string frames = got.substr(kFiller);
    CHECK(static_cast<std::uint8_t>(frames[0]) == (i < kCompressing ? 0xC1 : 0x81));
    Reader r;
    r.session.feed(frames);
    CHECK(r.messages == std::vector<std::string>(3, data));
  }
  for (auto& sub : subscribers) hub.unsubscribe_all(*sub);
}

TEST_CASE("A compressed bomb is closed with 1009 without inflating past the limit",
          "[ws][net][deflate][bomb]") {
  ws::NetHandlerOptions o = compressing();
  o.session.max_message_bytes = 64 * 1024;
  Fixture f(o);
  Peer& p = f.connect("permessage-deflate");
  p.send(client_frame(ws::Opcode::binary, compressed(std::string(10 << 20, 'a')), true, 0x4));
  const std::string got = p.received();
  CHECK(got == ws_test::server_close(1009));
  REQUIRE(f.app.closes.size() == 1);
  CHECK(f.app.closes[0].sent_code == 1009);
  CHECK(f.ws.stats().protocol_errors == 1);
  CHECK(f.ws.deflate_pool()->lent_inflaters() == 0);
}
