// The opening handshake: RFC 6455's accept key, a browser's request accepted
// with the exact response bytes, each refusal with its status and headers,
// subprotocol selection and the origin hook.
#include <heartwheel/ws/handshake.h>

#include <catch2/catch.hpp>
#include <set>

using namespace heartwheel;
using namespace heartwheel::ws;

namespace {

constexpr const char* kKey = "dGhlIHNhbXBsZSBub25jZQ==";
constexpr const char* kAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

http::Request browser_request() {
  http::Request r;
  r.method = "GET";
  r.target = "/chat";
  r.headers = {{"Host", "server.example.com"},   {"Upgrade", "websocket"},
               {"Connection", "Upgrade"},        {"Sec-WebSocket-Key", kKey},
               {"Origin", "http://example.com"}, {"Sec-WebSocket-Protocol", "chat, superchat"},
               {"Sec-WebSocket-Version", "13"}};
  return r;
}

void set_header(http::Request& r, const std::string& name, std::string value) {
  for (auto& h : r.headers)
    if (http::iequals(h.name, name)) {
      h.value = std::move(value);
      return;
    }
  r.headers.push_back({name, std::move(value)});
}

void remove_header(http::Request& r, const std::string& name) {
  std::erase_if(r.headers, [&](const http::Header& h) { return http::iequals(h.name, name); });
}

}  // namespace

TEST_CASE("ws handshake: the accept key of RFC 6455's example", "[ws][handshake]") {
  CHECK(accept_key(kKey) == kAccept);
}

TEST_CASE("ws handshake: a browser's request is accepted with the exact 101 response",
          "[ws][handshake]") {
  const HandshakeResult r = accept_handshake(browser_request());
  REQUIRE(r.accepted());
  CHECK(r.error.empty());
  CHECK(r.subprotocol.empty());  // the server offered none
  CHECK(r.response_bytes() ==
        "HTTP/1.1 101 Switching Protocols\r\n"
        "Upgrade: websocket\r\n"
        "Connection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
        "\r\n");
}

TEST_CASE("ws handshake: tokens match case-insensitively inside comma lists and across headers",
          "[ws][handshake]") {
  http::Request r = browser_request();
  set_header(r, "Connection", "keep-alive, Upgrade");  // what Firefox sends
  set_header(r, "Upgrade", "WebSocket");
  CHECK(accept_handshake(r).accepted());
  set_header(r, "Connection", "keep-alive");
  r.headers.push_back({"connection", " \tUPGRADE "});
  CHECK(accept_handshake(r).accepted());
  set_header(r, "Upgrade", "h2c, websocket");
  CHECK(accept_handshake(r).accepted());
  CHECK(header_has_token(r.headers, "Connection", "upgrade"));
  CHECK_FALSE(header_has_token(r.headers, "Connection", "upgrad"));
  CHECK_FALSE(header_has_token(r.headers, "Missing", "upgrade"));
}

TEST_CASE("ws handshake: each broken requirement is refused with its status and reason",
          "[ws][handshake]") {
  struct Case {
    const char* what;
    std::function<void(http::Request&)> breaks;
    int status;
    const char* error;
  };
  const Case cases[] = {
      {"POST", [](auto& r) { r.method = "POST"; }, 405, "needs GET"},
      {"HTTP/1.0",
       [](auto& r) {
         r.version_major = 1;
         r.version_minor = 0;
       },
       400, "HTTP/1.1"},
      {"no Host", [](auto& r) { remove_header(r, "Host"); }, 400, "Host"},
      {"no Upgrade", [](auto& r) { remove_header(r, "Upgrade"); }, 400, "Upgrade: websocket"},
      {"Upgrade: h2c", [](auto& r) { set_header(r, "Upgrade", "h2c"); }, 400, "Upgrade"},
      {"Connection: keep-alive", [](auto& r) { set_header(r, "Connection", "keep-alive"); }, 400,
       "Connection: Upgrade"},
      {"version 8", [](auto& r) { set_header(r, "Sec-WebSocket-Version", "8"); }, 426, "13"},
      {"no version", [](auto& r) { remove_header(r, "Sec-WebSocket-Version"); }, 426, "13"},
      {"no key", [](auto& r) { remove_header(r, "Sec-WebSocket-Key"); }, 400, "Sec-WebSocket-Key"},
      {"two keys",
       [](auto& r) {
         r.headers.push_back({"Sec-WebSocket-Key", kKey});
       },
       400, "repeated"},
      {"short key", [](auto& r) { set_header(r, "Sec-WebSocket-Key", "dGhlIHNhbXBsZQ=="); }, 400,
       "16 bytes"},
      {"key of 17 bytes",
       [](auto& r) { set_header(r, "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZSE="); }, 400,
       "16 bytes"},
      {"key not base64",
       [](auto& r) { set_header(r, "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25j*Q=="); }, 400,
       "16 bytes"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    http::Request r = browser_request();
    c.breaks(r);
    const HandshakeResult res = accept_handshake(r);
    CHECK(res.status == c.status);
    CHECK_FALSE(res.accepted());
    CHECK_THAT(res.error, Catch::Contains(c.error));
    const std::string bytes = res.response_bytes();
    CHECK_THAT(bytes, Catch::Contains("Connection: close\r\n"));
    CHECK_THAT(bytes, !Catch::Contains("Sec-WebSocket-Accept"));
  }
}

TEST_CASE(
    "ws handshake: a refusal's response has the status line, its headers and the reason "
    "as body",
    "[ws][handshake]") {
  http::Request r = browser_request();
  set_header(r, "Sec-WebSocket-Version", "8");
  const HandshakeResult res = accept_handshake(r);
  const std::string body = res.error + "\n";
  CHECK(res.response_bytes() ==
        "HTTP/1.1 426 Upgrade Required\r\n"
        "Sec-WebSocket-Version: 13\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "Content-Length: " +
            std::to_string(body.size()) +
            "\r\n"
            "Connection: close\r\n"
            "\r\n" +
            body);
  r.method = "PUT";
  CHECK_THAT(accept_handshake(r).response_bytes(),
             Catch::StartsWith("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\n"));
}

TEST_CASE(
    "ws handshake: the origin hook sees the Origin header (or nothing) and can refuse "
    "with 403",
    "[ws][handshake]") {
  std::vector<std::string> seen;
  HandshakeOptions options;
  options.check_origin = [&](std::string_view origin) {
    seen.emplace_back(origin);
    return origin == "http://example.com";
  };
  http::Request r = browser_request();
  CHECK(accept_handshake(r, options).accepted());
  set_header(r, "Origin", "http://evil.example");
  const HandshakeResult refused = accept_handshake(r, options);
  CHECK(refused.status == 403);
  CHECK_THAT(refused.response_bytes(), Catch::StartsWith("HTTP/1.1 403 Forbidden\r\n"));
  remove_header(r, "Origin");
  CHECK(accept_handshake(r, options).status == 403);
  CHECK(seen == std::vector<std::string>{"http://example.com", "http://evil.example", ""});
  // A request refused earlier never reaches the hook.
  r.method = "POST";
  CHECK(accept_handshake(r, options).status == 405);
  CHECK(seen.size() == 3);
}

TEST_CASE("ws handshake: the server's most preferred subprotocol that the client offers wins",
          "[ws][handshake]") {
  HandshakeOptions options;
  options.subprotocols = {"superchat", "chat"};
  http::Request r = browser_request();  // offers "chat, superchat"
  HandshakeResult res = accept_handshake(r, options);
  REQUIRE(res.accepted());
  CHECK(res.subprotocol == "superchat");
  CHECK_THAT(res.response_bytes(), Catch::EndsWith("Sec-WebSocket-Protocol: superchat\r\n\r\n"));

  set_header(r, "Sec-WebSocket-Protocol", "chat");
  r.headers.push_back({"Sec-WebSocket-Protocol", "v2.json"});  // a second header counts too
  options.subprotocols = {"v2.json", "chat"};
  CHECK(accept_handshake(r, options).subprotocol == "v2.json");

  options.subprotocols = {"CHAT"};  // names compare exactly
  res = accept_handshake(r, options);
  CHECK(res.accepted());
  CHECK(res.subprotocol.empty());
  CHECK_THAT(res.response_bytes(), !Catch::Contains("Sec-WebSocket-Protocol"));
}

TEST_CASE("ws handshake: is_websocket_upgrade tells upgrade requests from plain ones",
          "[ws][handshake]") {
  http::Request r = browser_request();
  CHECK(is_websocket_upgrade(r));
  remove_header(r, "Upgrade");
  CHECK_FALSE(is_websocket_upgrade(r));
}

TEST_CASE("ws handshake: client keys are valid, fresh, and accepted by the server",
          "[ws][handshake]") {
  std::set<std::string> keys;
  for (int i = 0; i < 100; ++i) {
    const std::string key = make_client_key();
    CHECK(is_valid_client_key(key));
    keys.insert(key);
  }
  CHECK(keys.size() == 100);
  CHECK(is_valid_client_key(kKey));
  CHECK_FALSE(is_valid_client_key(""));
  CHECK_FALSE(is_valid_client_key("dGhlIHNhbXBsZSBub25jZQ="));      // 23 characters
  CHECK_FALSE(is_valid_client_key("dGhlIHNhbXBsZSBub25jZQ=A"));     // padding in the wrong place
  CHECK_FALSE(is_valid_client_key("dGhl=HNhbXBsZSBub25jZQ=="));     // '=' inside
  CHECK_FALSE(is_valid_client_key("dGhlIHNhbXBsZSBub25j\xffQ=="));  // not base64
  http::Request r = browser_request();
  const std::string key = make_client_key();
  set_header(r, "Sec-WebSocket-Key", key);
  const HandshakeResult res = accept_handshake(r);
  REQUIRE(res.accepted());
  CHECK_THAT(res.response_bytes(), Catch::Contains("Sec-WebSocket-Accept: " + accept_key(key)));
}
