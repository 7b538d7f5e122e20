// Switching protocols (Responder::upgrade): the session stops parsing at the
// upgrade request, writes the 101 in request order, lets go of its deadlines
// and hands the connection over with the bytes that followed the request;
// on real connections (testing::Host) http::NetHandler frees the session and
// the next handler gets the connection, its bytes and its close.
#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "http_harness.h"

using namespace http_test;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;

namespace {

const std::string kUpgradeRequest =
    "GET /up HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n";

// Routes: /up switches to "echo" at once, /up-later keeps its Responder,
// anything else answers 200.
void install_routes(Harness& h) {
  h.handler = [&h](const Request& req, Responder r) {
    h.seen.push_back(req.target);
    if (req.path() == "/up") {
      REQUIRE(r.upgrade({{"Upgrade", "echo"}}, [](net::Connection&, std::string) {}));
    } else if (req.path() == "/up-later" || req.path() == "/async") {
      h.held.push_back(std::move(r));
    } else {
      r.respond(200, "hello\n");
    }
  };
}

}  // namespace

TEST_CASE("An upgrade answers 101 and hands over the bytes that followed the request",
          "[http][upgrade]") {
  Harness h;
  install_routes(h);
  h.start();
  h.feed(kUpgradeRequest + "first frame");
  REQUIRE(h.transport.switches == 1);
  CHECK(h.transport.upgrade_rest == "first frame");
  CHECK(h.transport.upgrade_next);
  const auto responses = h.responses();
  REQUIRE(responses.size() == 1);
  CHECK(responses[0].status == 101);
  CHECK(responses[0].header("connection") == "Upgrade");
  CHECK(responses[0].header("upgrade") == "echo");
  CHECK_FALSE(responses[0].has("content-length"));
  CHECK(h.transport.out.find("Switching Protocols") != std::string::npos);
  CHECK(h.session->upgraded());
  CHECK(h.session->closed());
  CHECK_FALSE(h.armed());  // no HTTP deadline left on the connection
  CHECK_FALSE(h.transport.in_request());
  CHECK(h.transport.closes == 0);  // switched, not closed
  CHECK(h.stats.upgrades == 1);
  h.feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");  // no longer HTTP's
  CHECK(h.responses().size() == 1);
  CHECK(h.seen.size() == 1);
}

TEST_CASE("Bytes that arrive while an upgrade waits for its answer are kept for the new protocol",
          "[http][upgrade]") {
  Harness h;
  install_routes(h);
  h.start();
  std::string request = kUpgradeRequest;
  request.replace(request.find("/up"), 3, "/up-later");
  h.feed(request + "ab");
  CHECK_FALSE(h.transport.reading);  // paused: the rest waits in the kernel
  h.feed("cd");                      // a read that was already under way
  REQUIRE(h.held.size() == 1);
  CHECK(h.transport.switches == 0);
  REQUIRE(h.held[0].upgrade({{"Upgrade", "echo"}}, [](net::Connection&, std::string) {}));
  REQUIRE(h.transport.switches == 1);
  CHECK(h.transport.upgrade_rest == "abcd");
  CHECK_FALSE(h.held[0].active());
}

TEST_CASE("A pipelined upgrade waits until the answers before it are written", "[http][upgrade]") {
  Harness h;
  install_routes(h);
  h.start();
  h.feed("GET /async HTTP/1.1\r\nHost: x\r\n\r\n" + kUpgradeRequest + "rest");
  REQUIRE(h.held.size() == 1);
  CHECK(h.transport.switches == 0);  // the 101 is queued behind /async's answer
  CHECK(h.transport.out.empty());
  REQUIRE(h.held[0].respond(200, "first\n"));
  REQUIRE(h.transport.switches == 1);
  CHECK(h.transport.upgrade_rest == "rest");
  const auto responses = h.responses();
  REQUIRE(responses.size() == 2);
  CHECK(responses[0].status == 200);
  CHECK(responses[0].body == "first\n");
  CHECK(responses[1].status == 101);
}

TEST_CASE("An upgrade request answered with a response ends its connection", "[http][upgrade]") {
  Harness h;
  h.handler = [](const Request&, Responder r) { r.respond(Response::text(426, "no\n")); };
  h.start();
  h.feed(kUpgradeRequest + "ignored");
  CHECK(h.transport.switches == 0);
  const auto responses = h.responses();
  REQUIRE(responses.size() == 1);
  CHECK(responses[0].status == 426);
  CHECK(responses[0].header("connection") == "close");
  CHECK(h.transport.closes == 1);
  CHECK(h.transport.reason() == CloseReason::protocol_close);
  CHECK(h.stats.upgrades == 0);
}

TEST_CASE("upgrade is refused for a request that did not ask to switch protocols",
          "[http][upgrade]") {
  Harness h;
  std::vector<std::string> errors;
  h.handler = [&](const Request&, Responder r) {
    CHECK_FALSE(r.upgrade({{"Upgrade", "echo"}}, [](net::Connection&, std::string) {}));
    errors.push_back(r.error());
    CHECK(r.active());  // still unanswered: the handler answers otherwise
    r.respond(200, "plain\n");
  };
  h.start();
  // No Connection: upgrade, so not an upgrade request (llhttp agrees).
  h.feed("GET /a HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n\r\n");
  h.feed("GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(errors.size() == 1);  // the first request closed the connection (Upgrade header)
  CHECK(errors[0].find("Upgrade and Connection: upgrade") != std::string::npos);
  CHECK(h.transport.switches == 0);
  REQUIRE(h.responses().size() == 1);
  CHECK(h.responses()[0].status == 200);
}

TEST_CASE("A client that half-closes before its 101 is not handed over", "[http][upgrade]") {
  Harness h;
  install_routes(h);
  h.start();
  std::string request = kUpgradeRequest;
  request.replace(request.find("/up"), 3, "/up-later");
  h.feed(request);
  h.session->on_eof();
  REQUIRE(h.held.size() == 1);
  h.held[0].upgrade({{"Upgrade", "echo"}}, [](net::Connection&, std::string) {});
  CHECK(h.transport.switches == 0);
  CHECK(h.transport.closes == 1);
  CHECK(h.transport.reason() == CloseReason::peer_closed);
}

// ---- on real connections: http::NetHandler and the next handler ----------

namespace {

// What the connection becomes: echoes, remembers what it saw.
struct EchoProtocol final : net::Handler {
  void on_data(net::Connection& c, std::string_view d) override {
    seen.append(d);
    c.write(d);
  }
  void on_close(net::Connection&, net::CloseReason r, std::error_code) override {
    closed = true;
    reason = r;
  }
  std::string seen;
  bool closed = false;
  net::CloseReason reason = net::CloseReason::local;
};

}  // namespace

TEST_CASE("NetHandler frees the session and the next handler gets the connection and its bytes",
          "[http][upgrade][net]") {
  EchoProtocol echo;
  std::string handed;
  SessionOptions options;
  options.keepalive_timeout = 1s;
  options.header_timeout = 1s;
  NetHandler http(options, [&](const Request&, Responder r) {
    REQUIRE(r.upgrade({{"Upgrade", "echo"}}, [&](net::Connection& c, std::string rest) {
      handed = rest;
      c.set_handler(echo);
      c.write(rest);  // the new protocol's first bytes
    }));
  });
  Host host;
  Peer& peer = host.open(http);
  peer.send(kUpgradeRequest + "hello");
  const std::string got = peer.received();
  const auto head_end = got.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  CHECK(got.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) == 0);
  CHECK(got.substr(head_end + 4) == "hello");
  CHECK(handed == "hello");
  CHECK(http.session_count() == 0);
  CHECK(http.stats().upgrades == 1);

  peer.send("more");  // reading was resumed for the new handler
  CHECK(peer.received() == "more");
  CHECK(echo.seen == "more");
  host.run_for(5s);  // HTTP's keep-alive and header timeouts are gone with the session
  REQUIRE(peer.open());
  peer.close();
  host.run_for(1ms);
  CHECK(echo.closed);
  CHECK(echo.reason == net::CloseReason::peer_closed);
  CHECK(http.stats().closed_by_reason[static_cast<std::size_t>(net::CloseReason::peer_closed)] ==
        0);  // the connection was no longer HTTP's
}
