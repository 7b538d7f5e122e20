// HTTP session protocol behaviour: keep-alive, pipelining order, chunked
// bodies, 100-continue, HTTP/1.0, limits, malformed input, drain, handlers
// that answer late, stream, throw or forget. No sockets, no sleeping.
#include "http_harness.h"

using namespace http_test;

namespace {
const char* kGet = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
std::string get(const std::string& target) {
  return "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
}
}  // namespace

TEST_CASE("A keep-alive GET is answered and the connection stays open", "[http]") {
  Harness h;
  h.start();
  h.feed(kGet);
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 200);
  CHECK(rs[0].body == "hello\n");
  CHECK_FALSE(rs[0].has("connection"));
  CHECK(rs[0].has("date"));
  CHECK_FALSE(h.closed());
  CHECK(h.stats.requests == 1);
  CHECK(h.stats.responses[2] == 1);
  h.feed(kGet);
  CHECK(h.responses().size() == 2);
}

TEST_CASE("Pipelined responses go out in request order even when a later one is answered first",
          "[http][pipelining]") {
  Harness h;
  h.start();
  h.feed(get("/async?n=1") + get("/async?n=2") + get("/"));
  REQUIRE(h.held.size() == 2);
  CHECK(h.seen == std::vector<std::string>{"/async?n=1", "/async?n=2", "/"});
  CHECK(h.transport.out.empty());  // "/" is ready but waits for the two before it
  CHECK(h.transport.in_request());
  REQUIRE(h.held[1].respond(200, "second"));
  CHECK(h.transport.out.empty());
  REQUIRE(h.held[0].respond(200, "first"));
  auto rs = h.responses();
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].body == "first");
  CHECK(rs[1].body == "second");
  CHECK(rs[2].body == "hello\n");
  CHECK_FALSE(h.closed());
  CHECK_FALSE(h.transport.in_request());
}

TEST_CASE("Requests split at every byte boundary parse the same", "[http][pipelining]") {
  const std::string input =
      get("/a") + "POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc" + get("/b");
  for (std::size_t cut = 1; cut < input.size(); ++cut) {
    Harness h;
    h.start();
    h.feed(std::string_view(input).substr(0, cut));
    h.feed(std::string_view(input).substr(cut));
    auto rs = h.responses();
    INFO("cut at " << cut);
    REQUIRE(rs.size() == 3);
    CHECK(rs[1].body == "abc");
  }
}

TEST_CASE("A chunked request body is de-chunked for the handler", "[http][body]") {
  Harness h;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  h.feed("5\r\nhello\r\n");
  h.feed("1;ext=1\r\n \r\n6\r\nworld!\r\n");
  CHECK(h.transport.out.empty());
  h.feed("0\r\n\r\n");
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].body == "hello world!");
}

TEST_CASE("Expect: 100-continue gets 100 Continue before the body", "[http][body]") {
  Harness h;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
  CHECK(h.transport.out == "HTTP/1.1 100 Continue\r\n\r\n");
  h.feed("ping");
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == 100);
  CHECK(rs[1].status == 200);
  CHECK(rs[1].body == "ping");
}

TEST_CASE("100 Continue for a pipelined request waits until it is at the head", "[http][body]") {
  Harness h;
  h.start();
  h.feed(get("/async") +
         "POST /echo HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  CHECK(h.transport.out.empty());
  h.held[0].respond(200, "first");
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[1].status == 100);
  h.feed("ok");
  rs = h.responses();
  REQUIRE(rs.size() == 3);
  CHECK(rs[2].body == "ok");
}

TEST_CASE("Expect: 100-continue with a too large body is refused before the body",
          "[http][limits]") {
  Harness h;
  h.options.max_body_bytes = 10;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n");
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 413);
  CHECK(rs[0].header("connection") == "close");
  CHECK(h.closed());
  CHECK(h.stats.body_too_large == 1);
}

TEST_CASE("An unknown expectation is answered 417", "[http]") {
  Harness h;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nContent-Length: 1\r\nExpect: teapot\r\n\r\n");
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 417);
  CHECK(h.closed());
}

TEST_CASE("HTTP/1.0 closes by default and keeps alive only when asked", "[http][http10]") {
  SECTION("plain HTTP/1.0") {
    Harness h;
    h.start();
    h.feed("GET / HTTP/1.0\r\n\r\n" + get("/never"));
    auto rs = h.responses();
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].header("connection") == "close");
    CHECK(h.closed());
    CHECK(h.session->close_reason() == CloseReason::protocol_close);
    CHECK(h.seen.size() == 1);
  }
  SECTION("HTTP/1.0 with Connection: keep-alive") {
    Harness h;
    h.start();
    h.feed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    auto rs = h.responses();
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].header("connection") == "keep-alive");
    CHECK_FALSE(h.closed());
  }
  SECTION("HTTP/1.0 streaming is close-delimited") {
    Harness h;
    h.start();
    h.feed("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    auto rs = h.responses();
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].body == "hello world");
    CHECK_FALSE(rs[0].has("transfer-encoding"));
    CHECK(h.closed());
  }
}

TEST_CASE("Connection: close on HTTP/1.1 ends the connection after the response", "[http]") {
  Harness h;
  h.start();
  h.feed("GET / HTTP/1.1\r\nConnection: close\r\n\r\n" + get("/ignored"));
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].header("connection") == "close");
  CHECK(h.closed());
  CHECK(h.transport.last_mode == Transport::CloseMode::kAfterFlush);
}

TEST_CASE("A streamed response is chunked for HTTP/1.1", "[http][stream]") {
  Harness h;
  h.start();
  h.feed(get("/stream") + kGet);
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].header("transfer-encoding") == "chunked");
  CHECK(rs[0].body == "hello world");
  CHECK_FALSE(h.closed());
}

TEST_CASE("A streamed 204 has neither body nor chunked coding and keeps the connection",
          "[http][stream]") {
  Harness h;
  h.start();
  h.feed(get("/stream204") + kGet);
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == 204);
  CHECK_FALSE(rs[0].has("transfer-encoding"));
  CHECK_FALSE(rs[0].has("content-length"));
  CHECK(rs[1].status == 200);
  CHECK_FALSE(h.closed());
}

TEST_CASE("A stream dropped by its handler is ended and the connection closed", "[http][stream]") {
  Harness h;
  h.start();
  h.feed(get("/stream-drop") + kGet);
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].body == "partial");
  CHECK(h.closed());
  CHECK(h.stats.handler_errors == 1);
}

TEST_CASE("An Upgrade request is answered as plain HTTP and the connection closed", "[http]") {
  Harness h;
  h.start();
  h.feed("GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" + get("/x"));
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 200);
  CHECK(rs[0].header("connection") == "close");
  CHECK(h.closed());
  CHECK(h.seen.size() == 1);
}

TEST_CASE("HEAD gets Content-Length but no body", "[http]") {
  Harness h;
  h.start();
  h.feed("HEAD / HTTP/1.1\r\n\r\n");
  auto rs = split_responses(h.transport.out, true);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].header("content-length") == "6");
  CHECK(h.transport.out.size() == h.transport.out.find("\r\n\r\n") + 4);
}

TEST_CASE("A shared body is handed to the transport by reference, framed like a copied one",
          "[http][shared]") {
  const auto page = std::make_shared<const std::string>(5000, 'p');
  Harness h;
  h.handler = [&](const Request& req, Responder r) {
    Response resp;
    if (req.target == "/both") resp.body = "also";
    resp.shared_body = page;
    r.respond(std::move(resp));
  };
  h.start();
  h.feed(get("/page") + get("/page"));
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  for (const auto& r : rs) {
    CHECK(r.status == 200);
    CHECK(r.header("content-length") == "5000");
    CHECK(r.body == *page);
  }
  CHECK(h.transport.shared_sends == 2);
  CHECK(h.transport.last_shared == page.get());  // the same buffer, never copied
  CHECK(page.use_count() == 1);                  // and not kept once handed on

  // HEAD: the length, no body, nothing handed on.
  h.transport.out.clear();
  h.feed("HEAD /page HTTP/1.1\r\n\r\n");
  rs = split_responses(h.transport.out, true);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].header("content-length") == "5000");
  CHECK(h.transport.out.size() == h.transport.out.find("\r\n\r\n") + 4);
  CHECK(h.transport.shared_sends == 2);

  // Both bodies set: a handler error (500), not a guess at which one was meant.
  h.transport.out.clear();
  h.feed(get("/both"));
  rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 500);
  CHECK(h.stats.invalid_responses == 1);
}

TEST_CASE("Too many header bytes get 431 and close", "[http][limits]") {
  Harness h;
  h.options.max_header_bytes = 100;
  h.start();
  h.feed("GET / HTTP/1.1\r\nX-Big: " + std::string(200, 'a') + "\r\n\r\n");
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 431);
  CHECK(rs[0].header("connection") == "close");
  CHECK_FALSE(rs[0].body.empty());
  CHECK(h.closed());
  CHECK(h.stats.header_too_large == 1);
  CHECK(h.seen.empty());
}

TEST_CASE("A request-target alone over the header limit gets 414", "[http][limits]") {
  Harness h;
  h.options.max_header_bytes = 100;
  h.start();
  h.feed("GET /" + std::string(200, 'a') + " HTTP/1.1\r\n\r\n");
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 414);
  CHECK(h.closed());
  CHECK(h.stats.header_too_large == 1);
}

TEST_CASE("Header bytes are counted the same however the request is split", "[http][limits]") {
  const std::string req =
      "GET /abc HTTP/1.1\r\nHost: example\r\nX-Long: " + std::string(40, 'v') + "\r\n\r\n";
  for (std::size_t limit : {std::size_t{60}, std::size_t{200}}) {
    Harness whole, bytewise;
    whole.options.max_header_bytes = bytewise.options.max_header_bytes = limit;
    whole.start();
    bytewise.start();
    whole.feed(req);
    for (char c : req) bytewise.feed(std::string_view(&c, 1));
    INFO("limit " << limit);
    REQUIRE(whole.responses().size() == 1);
    REQUIRE(bytewise.responses().size() == 1);
    CHECK(whole.responses()[0].status == bytewise.responses()[0].status);
    CHECK(whole.responses()[0].status == (limit == 60 ? 431 : 200));
  }
}

TEST_CASE("A body over the limit gets 413, announced or chunked", "[http][limits]") {
  Harness h;
  h.options.max_body_bytes = 8;
  h.start();
  SECTION("Content-Length too large: refused before the body") {
    h.feed("POST /echo HTTP/1.1\r\nContent-Length: 9\r\n\r\n");
  }
  SECTION("chunked body growing too large") {
    h.feed("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
    CHECK(h.transport.out.empty());
    h.feed("4\r\nmore\r\n");
  }
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 413);
  CHECK(h.closed());
  CHECK(h.seen.empty());
}

TEST_CASE("The last request allowed on a connection is answered with Connection: close",
          "[http][limits]") {
  Harness h;
  h.options.max_requests_per_connection = 2;
  h.start();
  h.feed(std::string(kGet) + kGet + kGet);
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK_FALSE(rs[0].has("connection"));
  CHECK(rs[1].header("connection") == "close");
  CHECK(h.closed());
  CHECK(h.session->close_reason() == CloseReason::protocol_close);
  CHECK(h.seen.size() == 2);
}

TEST_CASE("Malformed requests get 400 and close", "[http][errors]") {
  const char* bad =
      GENERATE("GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
               "POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
               "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
  Harness h;
  h.start();
  h.feed(bad);
  auto rs = h.responses();
  INFO(bad);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 400);
  CHECK(rs[0].header("connection") == "close");
  CHECK(rs[0].body == "Bad Request\n");
  CHECK(h.closed());
  CHECK(h.stats.parse_errors == 1);
}

TEST_CASE("Garbage after a good pipelined request: the good one first, then 400",
          "[http][errors]") {
  Harness h;
  h.start();
  h.feed(get("/async") + "\x01\x02 nonsense\r\n\r\n");
  CHECK(h.transport.out.empty());
  h.held[0].respond(200, "ok");
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == 200);
  CHECK_FALSE(rs[0].has("connection"));
  CHECK(rs[1].status == 400);
  CHECK(h.closed());
}

TEST_CASE("A throwing handler or a dropped Responder yields 500 and the pipeline moves on",
          "[http][errors]") {
  Harness h;
  h.start();
  h.feed(get("/throw") + get("/drop") + kGet);
  auto rs = h.responses();
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].status == 500);
  CHECK(rs[1].status == 500);
  CHECK(rs[2].status == 200);
  CHECK(h.stats.handler_errors == 2);
  CHECK_FALSE(h.closed());
}

TEST_CASE("Reading pauses when too many requests wait and resumes as answers go out",
          "[http][pipelining]") {
  Harness h;
  h.options.max_pipelined = 2;
  h.start();
  h.feed(get("/async?n=1") + get("/async?n=2") + get("/async?n=3") + get("/async?n=4"));
  CHECK(h.held.size() == 2);
  CHECK_FALSE(h.transport.reading);
  h.held[0].respond(200, "1");
  CHECK(h.held.size() == 3);
  CHECK_FALSE(h.transport.reading);  // full again
  h.held[1].respond(200, "2");
  h.held[2].respond(200, "3");
  REQUIRE(h.held.size() == 4);
  CHECK(h.transport.reading);
  h.held[3].respond(200, "4");
  auto rs = h.responses();
  REQUIRE(rs.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(rs[static_cast<std::size_t>(i)].body == std::to_string(i + 1));
}

TEST_CASE("Drain closes an idle connection at once and answers in-flight ones with close",
          "[http][drain]") {
  SECTION("idle") {
    Harness h;
    h.start();
    h.feed(kGet);
    h.session->drain();
    CHECK(h.closed());
    CHECK(h.session->close_reason() == CloseReason::drain);
    CHECK(h.responses().size() == 1);
  }
  SECTION("in flight") {
    Harness h;
    h.start();
    h.feed(get("/async") + get("/async"));
    h.session->drain();
    CHECK_FALSE(h.closed());
    h.feed(kGet);  // not begun before the drain: never answered
    h.held[0].respond(200, "a");
    h.held[1].respond(200, "b");
    auto rs = h.responses();
    REQUIRE(rs.size() == 2);
    CHECK_FALSE(rs[0].has("connection"));
    CHECK(rs[1].header("connection") == "close");
    CHECK(h.closed());
    CHECK(h.seen.size() == 2);
  }
}

TEST_CASE("EOF after complete pipelined requests: they are answered, then the session closes",
          "[http]") {
  Harness h;
  h.start();
  h.feed(get("/async") + kGet + "GET /partial HTTP/1.1\r\n");
  h.session->on_eof();
  CHECK_FALSE(h.closed());
  h.held[0].respond(200, "x");
  CHECK(h.responses().size() == 2);
  CHECK(h.closed());
  CHECK(h.session->close_reason() == CloseReason::peer_closed);
}

TEST_CASE("A Responder outliving its session is inactive and harmless", "[http]") {
  Harness h;
  h.start();
  h.feed(get("/async") + get("/async"));
  int abandoned = 0;
  h.held[0].on_abandon([&] { ++abandoned; });
  h.held[1].on_abandon([&] { ++abandoned; });
  h.held[1].respond(200, "answered: not abandoned");
  h.session.reset();
  CHECK(abandoned == 1);
  CHECK_FALSE(h.held[0].active());
  CHECK_FALSE(h.held[0].respond(200, "late"));
}

TEST_CASE("Request accessors split path and query", "[http]") {
  Request r;
  r.target = "/delay?ms=25&x";
  CHECK(r.path() == "/delay");
  CHECK(r.query() == "ms=25&x");
  CHECK(r.query_param("ms") == std::optional<std::string_view>("25"));
  CHECK(r.query_param("x") == std::optional<std::string_view>(""));
  CHECK_FALSE(r.query_param("y"));
}

TEST_CASE("Query values are percent-decoded as browsers encode them", "[http]") {
  CHECK(decode_query_component("private%3Aceo") == std::optional<std::string>("private:ceo"));
  CHECK(decode_query_component("dm%3a%23bob%2Ccarol") ==
        std::optional<std::string>("dm:#bob,carol"));
  CHECK(decode_query_component("a+b%2B") == std::optional<std::string>("a b+"));
  CHECK(decode_query_component("%00%ff") == std::optional<std::string>(std::string("\0\xff", 2)));
  CHECK(decode_query_component("") == std::optional<std::string>(""));
  for (const char* bad : {"%", "%4", "%zz", "a%g0", "100%"})
    CHECK_FALSE(decode_query_component(bad));
  Request r;
  r.target = "/sse?channel=private%3Aceo&chan%6eel=second&token=a%2Bb&empty&bad=%zz";
  CHECK(r.query_value("channel") == std::optional<std::string>("private:ceo"));  // the first
  CHECK(r.query_value("token") == std::optional<std::string>("a+b"));
  CHECK(r.query_value("empty") == std::optional<std::string>(""));
  CHECK_FALSE(r.query_value("missing"));
  CHECK_THROWS_WITH(r.query_value("bad"), Catch::Contains("bad") && Catch::Contains("'%'"));
  r.target = "/sse?chan%6eel=decoded+key";
  CHECK(r.query_value("channel") == std::optional<std::string>("decoded key"));
  CHECK(r.query_param("channel") == std::nullopt);  // query_param compares as sent
}

TEST_CASE("Invalid options are refused with the field's name", "[http]") {
  SessionOptions o;
  o.header_timeout = -1ms;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("header_timeout"));
  o = {};
  o.max_pipelined = 0;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("max_pipelined"));
}

TEST_CASE(
    "Response splitting is refused: CR, LF or NUL in a header answers 500, writes nothing of it",
    "[http][errors][splitting]") {
  const Headers bad = GENERATE(
      Headers{{"X-Evil", "a\r\nSet-Cookie: pwned=1"}},
      Headers{{"X-Evil", "a\nSet-Cookie: pwned=1"}}, Headers{{"X-Evil", std::string("a\0b", 3)}},
      Headers{{"X-Evil\r\nSet-Cookie", "pwned=1"}}, Headers{{"Bad Name", "v"}}, Headers{{"", "v"}},
      Headers{{"X:Colon", "v"}});
  const bool stream = GENERATE(false, true);
  Harness h;
  std::string error;
  bool result = true;
  h.handler = [&](const Request&, Responder r) {
    if (stream) {
      result = r.begin(200, bad);
      CHECK_FALSE(r.write("body"));
    } else {
      Response resp;
      resp.headers = bad;
      resp.body = "body";
      result = r.respond(std::move(resp));
    }
    error = r.error();
    CHECK_FALSE(r.active());  // answered: the 500 stands in
  };
  h.start();
  h.feed(get("/") + kGet);
  CHECK_FALSE(result);
  CHECK_FALSE(error.empty());
  CHECK(error.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);  // loggable
  CHECK(h.transport.out.find("pwned") == std::string::npos);
  CHECK(h.transport.out.find("body") == std::string::npos);
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == 500);
  CHECK(rs[1].status == 500);
  CHECK(h.stats.invalid_responses == 2);
  CHECK(h.stats.handler_errors == 0);
  CHECK_FALSE(h.closed());  // the connection itself is fine
}

TEST_CASE("A status outside 100..599 is refused with a reason, good headers pass",
          "[http][errors][splitting]") {
  Harness h;
  std::vector<bool> results;
  std::vector<std::string> errors;
  h.handler = [&](const Request& req, Responder r) {
    const int status = req.path() == "/ok" ? 299 : 1000;
    results.push_back(r.respond(Response{status, {{"X-Fine", "tab\tand ~!#"}}, "x"}));
    errors.push_back(r.error());
  };
  h.start();
  h.feed(get("/bad") + get("/ok"));
  REQUIRE(results == std::vector<bool>{false, true});
  CHECK(errors[0].find("1000") != std::string::npos);
  CHECK(errors[1].empty());
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == 500);
  CHECK(rs[1].status == 299);
  CHECK(rs[1].header("x-fine") == "tab\tand ~!#");
}

TEST_CASE(
    "Answers held behind an unfinished one are bounded: refused, counted, retried when writable",
    "[http][backpressure][pipelining]") {
  Harness h;
  h.options.max_buffered_bytes = 1000;
  std::vector<bool> results;
  std::vector<Responder> refused;
  h.handler = [&](const Request& req, Responder r) {
    if (req.path() == "/async") {
      h.held.push_back(std::move(r));
      return;
    }
    CHECK_FALSE(r.writable());  // behind /async: not on the wire
    results.push_back(r.respond(200, std::string(600, req.target.back())));
    if (!results.back()) {
      CHECK(r.active());
      CHECK(r.error().find("max_buffered_bytes") != std::string::npos);
      CHECK(h.session->buffered_bytes() == 600);
      refused.push_back(std::move(r));
    }
  };
  h.start();
  h.feed(get("/async") + get("/big?1") + get("/big?2"));
  REQUIRE(results == std::vector<bool>{true, false});
  CHECK(h.stats.answers_refused == 1);
  REQUIRE(refused.size() == 1);
  bool retried = false;
  refused[0].on_writable([&] { retried = refused[0].respond(200, std::string(600, '2')); });
  CHECK_FALSE(retried);
  REQUIRE(h.held[0].respond(200, "first"));  // /big?1 goes out behind it; /big?2 is on the wire
  CHECK(retried);
  auto rs = h.responses();
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].body == "first");
  CHECK(rs[1].body == std::string(600, '1'));
  CHECK(rs[2].body == std::string(600, '2'));
  CHECK(h.stats.handler_errors == 0);
}

TEST_CASE("A refused answer dropped by its handler becomes a 500 and the pipeline moves on",
          "[http][backpressure][pipelining]") {
  Harness h;
  h.options.max_buffered_bytes = 100;
  h.handler = [&](const Request& req, Responder r) {
    if (req.path() == "/async")
      h.held.push_back(std::move(r));
    else
      CHECK_FALSE(r.respond(200, std::string(101, 'x')));  // dropped on return
  };
  h.start();
  h.feed(get("/async") + get("/big"));
  h.held[0].respond(200, "first");
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[1].status == 500);
  CHECK(h.stats.answers_refused == 1);
  CHECK(h.stats.handler_errors == 1);
}

TEST_CASE("No request is parsed while the transport is unwritable, reading resumes with it",
          "[http][backpressure][pipelining]") {
  Harness h;
  h.start();
  h.feed(kGet);
  REQUIRE(h.responses().size() == 1);
  h.transport.set_writable(false);  // the answer sits above the high watermark
  h.feed(get("/a") + get("/b"));
  CHECK(h.seen.size() == 1);
  CHECK_FALSE(h.transport.reading);
  CHECK(h.stats.backpressure_pauses == 1);
  h.run_for(10s);  // no keep-alive close: the bytes wait, not the client
  CHECK_FALSE(h.closed());
  h.transport.set_writable(true);
  CHECK(h.transport.reading);
  CHECK(h.seen == std::vector<std::string>{"/", "/a", "/b"});
  CHECK(h.responses().size() == 3);
}

TEST_CASE("Responder::on_writable runs when its streamed answer may go on",
          "[http][backpressure]") {
  Harness h;
  Responder stream;
  h.handler = [&](const Request& req, Responder r) {
    if (req.path() == "/async")
      h.held.push_back(std::move(r));
    else
      stream = std::move(r);
  };
  h.start();
  h.feed(get("/async") + get("/stream"));
  REQUIRE(stream.begin(200));
  CHECK_FALSE(stream.writable());  // behind /async
  int runs = 0;
  stream.on_writable([&] { ++runs; });
  h.held[0].respond(200, "first");  // the stream is on the wire now
  CHECK(runs == 1);
  CHECK(stream.writable());
  h.transport.set_writable(false);
  CHECK_FALSE(stream.writable());
  stream.on_writable([&] { ++runs; });
  CHECK(runs == 1);
  h.transport.set_writable(true);
  CHECK(runs == 2);
  stream.on_writable([&] { ++runs; });  // writable now: at once
  CHECK(runs == 3);
  REQUIRE(stream.write("x"));
  REQUIRE(stream.end());
  CHECK(h.responses().size() == 2);
}

TEST_CASE("Slots that are not the session's are left to the owner", "[http][timeout]") {
  Harness h;
  h.start();
  CHECK(h.session->on_deadline(net::Deadline::read_idle) == net::DeadlineAction::close);
  CHECK(h.session->on_deadline(net::Deadline::max_age) == net::DeadlineAction::close);
  // A stale slot of its own (already moved on) changes nothing.
  CHECK(h.session->on_deadline(http::deadline::header_timeout) == net::DeadlineAction::keep);
  CHECK(h.session->on_deadline(net::Deadline::request_timeout) == net::DeadlineAction::keep);
  CHECK_FALSE(h.closed());
}

TEST_CASE("Pipelined requests from one read are answered pipeline_burst per loop turn",
          "[http][pipelining]") {
  Harness h;
  h.options.pipeline_burst = 2;
  h.options.pipeline_slice = std::chrono::hours(1);  // the count alone decides here
  h.transport.turns = true;
  h.start();
  h.feed(get("/1") + get("/2") + get("/3") + get("/4") + get("/5"));
  CHECK(h.responses().size() == 2);
  CHECK(h.transport.yields == 1);
  CHECK(h.stats.pipeline_yields == 1);
  // The rest waits in the session; the transport reads on (no system calls
  // per turn) until 64 KiB wait unparsed, then TCP pushes back.
  CHECK(h.transport.reading);
  // A request waiting for its turn is not idleness: no keep-alive close.
  CHECK(h.transport.deadline(http::deadline::keepalive_timeout) == heartwheel::kNever);
  h.transport.give_turn();
  CHECK(h.responses().size() == 4);
  CHECK(h.transport.yields == 2);
  h.transport.give_turn();
  auto rs = h.responses();
  REQUIRE(rs.size() == 5);
  CHECK(h.seen == std::vector<std::string>{"/1", "/2", "/3", "/4", "/5"});
  CHECK(h.transport.yields == 2);  // nothing left to yield for
  CHECK(h.transport.reading);
  CHECK_FALSE(h.closed());
  // A pipeline longer than the read-ahead: reading stops while it waits, and
  // every request is still answered, in order, two per turn.
  std::string many;
  for (int i = 0; i < 3000; ++i) many += get("/m" + std::to_string(i));
  REQUIRE(many.size() > 64 * 1024);
  h.feed(many.substr(0, 1000));
  CHECK(h.transport.reading);
  h.feed(many.substr(1000));
  CHECK_FALSE(h.transport.reading);
  for (int turn = 0; turn < 1498; ++turn) h.transport.give_turn();  // 7 answered before
  CHECK(h.responses().size() == 3003);
  h.transport.give_turn();
  REQUIRE(h.responses().size() == 3005);
  CHECK(h.seen.back() == "/m2999");
  CHECK(h.transport.reading);
  // The ~100 KiB that waited are freed, not kept for the connection's life.
  CHECK(h.session->pending_capacity() < 1024);
  // A transport without turns gets every request of the read at once.
  Harness all;
  all.options.pipeline_burst = 1;
  all.start();
  all.feed(get("/1") + get("/2") + get("/3"));
  CHECK(all.responses().size() == 3);
  CHECK(all.stats.pipeline_yields == 0);
}

TEST_CASE("pipeline_slice: a read whose answers take that long yields after the first",
          "[http][pipelining]") {
  Harness h;
  h.options.pipeline_burst = 100;
  h.options.pipeline_slice = std::chrono::nanoseconds(1);  // every answer takes longer
  h.transport.turns = true;
  h.start();
  h.feed(get("/1") + get("/2") + get("/3"));
  CHECK(h.responses().size() == 1);  // one per turn, never none
  h.transport.give_turn();
  CHECK(h.responses().size() == 2);
  h.transport.give_turn();
  CHECK(h.responses().size() == 3);
  CHECK(h.stats.pipeline_yields == 2);
}
