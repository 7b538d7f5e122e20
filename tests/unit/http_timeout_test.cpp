// Every HTTP timeout fires on time (within one 1 ms tick of virtual time),
// with the right status or a quiet close, and is counted, whether the
// deadline set re-arms its one entry lazily or eagerly. No sleeping:
// ManualTimerService advances a virtual clock through the wheel. The send
// timeout is the connection's write-stall rule: http_host_test.cpp.
#include "http_harness.h"

using namespace http_test;

namespace {
const char* kGet = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

// Runs the clock 1 ms at a time until the session closes; returns the time taken.
Duration run_until_closed(Harness& h, Duration limit) {
  Duration t{0};
  while (!h.closed() && t < limit) {
    h.run_for(1ms);
    t += 1ms;
  }
  return t;
}
}  // namespace

TEST_CASE("Header timeout: 408 and close when headers are not complete in time",
          "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.header_timeout = 1s;
  h.start();
  h.feed("GET / HTTP/1.1\r\n");
  h.run_for(999ms);
  CHECK_FALSE(h.closed());
  h.run_for(2ms);
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 408);
  CHECK(rs[0].header("connection") == "close");
  CHECK(h.closed());
  CHECK(h.stats.header_timeouts == 1);
  CHECK(h.session->close_reason() == http::close_reason::header_timeout);
}

TEST_CASE("A client trickling one byte at a time does not push the header timeout back",
          "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.header_timeout = 1s;
  h.options.request_timeout = 0s;
  h.start();
  const std::string req = "GET / HTTP/1.1\r\nX-Slow: " + std::string(100, 'a');
  Duration elapsed{0};
  for (char c : req) {
    if (h.closed()) break;
    h.feed(std::string_view(&c, 1));
    h.run_for(50ms);
    elapsed += 50ms;
  }
  REQUIRE(h.closed());
  CHECK(elapsed >= 1s);
  CHECK(elapsed <= 1050ms);  // 408 at the first run_for crossing 1 s
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 408);
}

TEST_CASE("Body timeout: the gap between body reads, refreshed by each read", "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.body_timeout = 500ms;
  h.options.request_timeout = 0s;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  h.run_for(400ms);
  h.feed("de");
  h.run_for(400ms);  // 800 ms since headers, but only 400 since the last read
  CHECK_FALSE(h.closed());
  const Duration t = run_until_closed(h, 1s);
  CHECK(t >= 100ms);
  CHECK(t <= 102ms);
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 408);
  CHECK(h.stats.body_timeouts == 1);
  CHECK(h.seen.empty());
}

TEST_CASE("Request timeout with an unanswered handler: 503 with Connection: close",
          "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.request_timeout = 2s;
  h.start();
  h.feed("GET /async HTTP/1.1\r\n");
  h.run_for(500ms);
  h.feed("\r\n");
  REQUIRE(h.held.size() == 1);
  CHECK(h.held[0].deadline() == TimePoint{} + 2s);
  CHECK(h.held[0].timers() == &h.timers);
  bool abandoned = false;
  h.held[0].on_abandon([&] { abandoned = true; });
  const Duration t = run_until_closed(h, 3s);
  CHECK(t >= 1500ms);  // 2 s from the first byte, not from the handler call
  CHECK(t <= 1502ms);
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 503);
  CHECK(rs[0].header("connection") == "close");
  CHECK_FALSE(h.held[0].active());
  CHECK_FALSE(h.held[0].respond(200, "too late"));
  CHECK(abandoned);
  CHECK(h.stats.request_timeouts == 1);
}

TEST_CASE("Request timeout while the client is still sending: 408", "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.request_timeout = 1s;
  h.options.body_timeout = 0s;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\nsome");
  const Duration t = run_until_closed(h, 2s);
  CHECK(t >= 1s);
  CHECK(t <= 1002ms);
  auto rs = h.responses();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].status == 408);
  CHECK(h.stats.request_timeouts == 1);
}

TEST_CASE("Request timeout covers the oldest of several pipelined requests", "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.request_timeout = 1s;
  h.start();
  h.feed("GET /async?n=1 HTTP/1.1\r\n\r\n");
  h.run_for(600ms);
  h.feed("GET /async?n=2 HTTP/1.1\r\n\r\n");
  h.held[0].respond(200, "one");
  // The second request's own deadline is at 1.6 s, not 1 s.
  h.run_for(900ms);
  CHECK_FALSE(h.closed());
  h.run_for(101ms);
  CHECK(h.closed());
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[1].status == 503);
}

TEST_CASE("A request held back by the pipeline limit gets its own full request timeout",
          "[http][timeout][pipelining]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.request_timeout = 1s;
  h.options.max_pipelined = 1;
  h.start();
  h.feed("GET /async?n=1 HTTP/1.1\r\n\r\nGET /async?n=2 HTTP/1.1\r\n\r\n");
  REQUIRE(h.held.size() == 1);
  h.run_for(900ms);
  h.held[0].respond(200, "one");  // the second request is parsed now, at 900 ms
  REQUIRE(h.held.size() == 2);
  CHECK(h.held[1].deadline() == TimePoint{} + 1900ms);
  h.run_for(999ms);
  CHECK_FALSE(h.closed());
  h.run_for(2ms);
  CHECK(h.closed());
  auto rs = h.responses();
  REQUIRE(rs.size() == 2);
  CHECK(rs[1].status == 503);
}

TEST_CASE("Keep-alive timeout closes an idle kept-alive connection quietly", "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.keepalive_timeout = 5s;
  h.start();
  h.feed(kGet);
  const std::size_t bytes = h.transport.out.size();
  h.run_for(4999ms);
  CHECK_FALSE(h.closed());
  h.run_for(2ms);
  CHECK(h.closed());
  CHECK(h.transport.out.size() == bytes);  // nothing written: a quiet close
  CHECK(h.stats.keepalive_timeouts == 1);
  CHECK(h.session->close_reason() == http::close_reason::keepalive_timeout);
}

TEST_CASE("Each new request restarts nothing but its own timeouts: keep-alive re-arms after it",
          "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.keepalive_timeout = 1s;
  h.start();
  h.feed(kGet);
  for (int i = 0; i < 5; ++i) {
    h.run_for(900ms);
    h.feed(kGet);
  }
  CHECK_FALSE(h.closed());
  CHECK(h.responses().size() == 6);
}

TEST_CASE("A request read and answered within one read reaches the transport as one change",
          "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.keepalive_timeout = 5s;
  h.options.header_timeout = 10s;
  h.start();
  h.feed(kGet);
  h.run_for(1s);
  const int before = h.transport.deadline_calls;
  h.feed(kGet);
  REQUIRE(h.responses().size() == 2);
  // Keep-alive -> headers -> keep-alive and a request begun and ended, all
  // inside one on_data: the transport hears only the keep-alive slot, moved.
  CHECK(h.transport.deadline_calls - before == 1);
  CHECK(h.transport.deadline(http::deadline::keepalive_timeout) == h.timers.now() + 5s);
  CHECK(h.transport.deadline(http::deadline::header_timeout) == kNever);
  CHECK_FALSE(h.transport.in_request());
  // A request that arrives in two reads has its header timeout and request
  // slot set in between.
  h.run_for(1s);
  h.feed("GET / HTTP/1.1\r\n");
  CHECK(h.transport.deadline(http::deadline::header_timeout) == h.timers.now() + 10s);
  CHECK(h.transport.deadline(http::deadline::keepalive_timeout) == kNever);
  CHECK(h.transport.in_request());
  h.feed("Host: x\r\n\r\n");
  CHECK(h.responses().size() == 3);
  CHECK(h.transport.deadline(http::deadline::header_timeout) == kNever);
  CHECK(h.transport.deadline(http::deadline::keepalive_timeout) == h.timers.now() + 5s);
  CHECK_FALSE(h.transport.in_request());
}

TEST_CASE("A connection that never sends a byte is closed quietly, not with 408",
          "[http][timeout]") {
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.header_timeout = 3s;
  h.options.keepalive_timeout = 60s;
  h.start();
  const Duration t = run_until_closed(h, 5s);
  CHECK(t >= 3s);
  CHECK(t <= 3001ms);
  CHECK(h.transport.out.empty());
  CHECK(h.stats.first_byte_timeouts == 1);
  CHECK(h.stats.header_timeouts == 0);
}

TEST_CASE("A zero timeout is off", "[http][timeout]") {
  Harness h;  // eager: the wheel holds an entry exactly while a deadline is set
  h.options.header_timeout = 0s;
  h.options.body_timeout = 0s;
  h.options.request_timeout = 0s;
  h.options.keepalive_timeout = 0s;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nab");
  h.run_for(std::chrono::hours(24));
  CHECK_FALSE(h.closed());
  CHECK_FALSE(h.armed());
  CHECK(h.timers.wheel().empty());
  CHECK(h.transport.in_request());  // in flight without a deadline (drain waits for it)
  h.feed("cde");
  CHECK(h.responses().size() == 1);
  CHECK_FALSE(h.transport.in_request());
}

TEST_CASE("One wheel entry covers every deadline of a session", "[http][timeout]") {
  Harness h;
  h.start();
  CHECK(h.transport.deadline(http::deadline::keepalive_timeout) == TimePoint{} + 10s);  // first byte
  h.feed("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nab");
  CHECK(h.transport.deadline(http::deadline::keepalive_timeout) == kNever);
  CHECK(h.transport.deadline(http::deadline::header_timeout) == kNever);
  CHECK(h.transport.deadline(http::deadline::body_timeout) == TimePoint{} + 10s);
  CHECK(h.transport.deadline(net::Deadline::request_timeout) == TimePoint{} + 30s);
  CHECK(h.timers.wheel().size() == 1);  // body + request deadline, one entry
  h.feed("cde");
  CHECK(h.transport.deadline(http::deadline::body_timeout) == kNever);
  CHECK(h.transport.deadline(net::Deadline::request_timeout) == kNever);
  CHECK(h.transport.deadline(http::deadline::keepalive_timeout) == TimePoint{} + 5s);
  CHECK(h.timers.wheel().size() == 1);
}

TEST_CASE("A closed session leaves no deadline set and no entry in the wheel", "[http][timeout]") {
  Harness h;
  h.start();
  h.feed("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nab");
  CHECK(h.armed());
  CHECK(h.transport.in_request());
  h.feed("GARBAGE");  // not a valid body end? it is body: complete it, then garbage
  h.feed("\x01\r\n\r\n");
  REQUIRE(h.closed());
  CHECK(h.transport.reason() == CloseReason::protocol_error);
  CHECK_FALSE(h.armed());
  CHECK_FALSE(h.transport.in_request());
  CHECK(h.timers.wheel().empty());
}
