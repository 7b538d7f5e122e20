// ws::ClientHandshake (sans I/O): the request it makes, and each check of
// the server's answer, split anywhere.
#include <heartwheel/common/error.h>
#include <heartwheel/ws/client_handshake.h>
#include <heartwheel/ws/handshake.h>

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

namespace ws = heartwheel::ws;
using Status = ws::ClientHandshake::Status;

namespace {

// RFC 6455's example key and its accept.
const std::string kKey = "dGhlIHNhbXBsZSBub25jZQ==";
const std::string kAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

ws::ClientHandshakeOptions options() {
  ws::ClientHandshakeOptions o;
  o.path = "/chat?x=1";
  o.host = "example.com:8000";
  o.subprotocols = {"v2.chat", "v1.chat"};
  o.headers = {{"Origin", "http://example.com"}};
  return o;
}

std::string answer(const std::string& extra, const std::string& accept = kAccept) {
  return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: " +
         accept + "\r\n" + extra + "\r\n";
}

Status feed_bytewise(ws::ClientHandshake& h, std::string bytes, std::string* rest = nullptr) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string_view one(bytes.data() + i, 1);
    const Status s = h.feed(one);
    if (s != Status::need_more) {
      if (rest) *rest = std::string(one) + bytes.substr(i + 1);
      return s;
    }
  }
  return Status::need_more;
}

}  // namespace

TEST_CASE("A client handshake asks for an upgrade with its key, subprotocols and headers",
          "[ws][client][handshake]") {
  const auto o = options();
  ws::ClientHandshake h(o, kKey);
  const std::string& r = h.request();
  CHECK(r.rfind("GET /chat?x=1 HTTP/1.1\r\nHost: example.com:8000\r\n", 0) == 0);
  CHECK(r.find("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n") != std::string::npos);
  CHECK(r.find("\r\nSec-WebSocket-Key: " + kKey + "\r\n") != std::string::npos);
  CHECK(r.find("\r\nSec-WebSocket-Version: 13\r\n") != std::string::npos);
  CHECK(r.find("\r\nSec-WebSocket-Protocol: v2.chat, v1.chat\r\n") != std::string::npos);
  CHECK(r.find("\r\nOrigin: http://example.com\r\n") != std::string::npos);
  CHECK(r.find("Sec-WebSocket-Extensions") == std::string::npos);
  CHECK(r.substr(r.size() - 4) == "\r\n\r\n");
  ws::ClientHandshake fresh(o);  // a key of its own
  CHECK(fresh.request() != h.request());
}

TEST_CASE("A client handshake accepts a correct 101 split anywhere and leaves the first frames",
          "[ws][client][handshake]") {
  const auto o = options();
  ws::ClientHandshake h(o, kKey);
  std::string rest;
  CHECK(feed_bytewise(h, answer("Sec-WebSocket-Protocol: v1.chat\r\n") + "\x81\x02hi", &rest) ==
        Status::accepted);
  CHECK(h.subprotocol() == "v1.chat");
  CHECK(rest == "\x81\x02hi");
}

TEST_CASE("A client handshake refuses what RFC 6455 says a client must fail",
          "[ws][client][handshake]") {
  auto o = options();
  const auto refused = [&](const std::string& bytes, const std::string& why) {
    ws::ClientHandshake h(o, kKey);
    INFO(bytes);
    CHECK(feed_bytewise(h, bytes) == Status::refused);
    CHECK(h.error().find(why) != std::string::npos);
    CHECK(h.error_code() == heartwheel::errc::protocol_error);
  };
  refused(answer("", "wrong"), "Sec-WebSocket-Accept");
  refused(answer("Sec-WebSocket-Protocol: v3.chat\r\n"), "did not offer");
  refused(answer("Sec-WebSocket-Extensions: permessage-deflate\r\n"), "did not ask for");
  refused("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
              kAccept + "\r\n\r\n",
          "Upgrade: websocket");
  refused("HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\n\r\nno!", "403");
  refused("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "200");
  refused("SSH-2.0\r\n\r\n", "not HTTP");
  // Extensions we asked for are passed through.
  o.extensions = "permessage-deflate; client_max_window_bits";
  ws::ClientHandshake h(o, kKey);
  CHECK(feed_bytewise(h, answer("Sec-WebSocket-Extensions: permessage-deflate\r\n")) ==
        Status::accepted);
  CHECK(h.extensions() == "permessage-deflate");
  CHECK(h.request().find(
            "\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n") !=
        std::string::npos);
}

TEST_CASE("A client handshake cut short is refused, and bad options are named",
          "[ws][client][handshake]") {
  const auto o = options();
  ws::ClientHandshake h(o, kKey);
  CHECK(feed_bytewise(h, "HTTP/1.1 101 Switching") == Status::need_more);
  CHECK(h.end_of_input() == Status::refused);
  CHECK(h.error_code() == heartwheel::errc::closed);
  auto bad = options();
  bad.path = "no-slash";
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("path"));
  bad = options();
  bad.host = "";
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("Host"));
  bad = options();
  bad.subprotocols = {"has space"};
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("subprotocol"));
}
