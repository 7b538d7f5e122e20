// http::NetHandler on a real net::Server and LoopWheel (loopback, port 0,
// bounded waits): pipelining, wheel-driven HTTP timeouts on real time,
// drain through net::Server::drain alone, and clean teardown of answers still pending in the wheel.
#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/server.h>

#include "net_test_support.h"

using namespace hwtest;
namespace http = heartwheel::http;
using heartwheel::TimerEntry;

namespace {

// Answers "/later" from a wheel entry 100 ms later ("/much-later": 10 s),
// everything else at once. `pending` counts the entries alive.
struct LaterAnswer : TimerEntry {
  LaterAnswer(http::Responder r, int* p) : TimerEntry(&fire), responder(std::move(r)), pending(p) {}
  static void fire(TimerEntry& e) {
    auto* self = static_cast<LaterAnswer*>(&e);
    self->responder.respond(200, "later");
    --*self->pending;
    delete self;
  }
  http::Responder responder;
  int* pending;
};

http::Handler routes(int* pending) {
  return [pending](const http::Request& req, http::Responder r) {
    if (req.path() != "/later" && req.path() != "/much-later") {
      r.respond(200, "now");
      return;
    }
    heartwheel::TimerService* timers = r.timers();
    auto* a = new LaterAnswer(std::move(r), pending);
    ++*pending;
    a->responder.on_abandon([a, timers, pending] {
      timers->cancel(*a);
      --*pending;
      delete a;
    });
    timers->schedule(*a, req.path() == "/later" ? Duration(100ms) : Duration(10s));
  };
}

struct Fixture {
  explicit Fixture(http::SessionOptions o = {}) : handler(o, routes(&pending)) {
    REQUIRE_FALSE(server.listen());
  }
  TestLoop t{5ms};
  int pending = 0;
  http::NetHandler handler;
  net::Server server{*t.wheel, handler, net::ServerOptions{}};
};

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("NetHandler answers pipelined requests in order over a real socket", "[http][net]") {
  Fixture f;
  RawClient c(&f.t.loop, f.server.port());
  c.send("GET /later HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\nGET /later HTTP/1.1\r\n\r\n");
  REQUIRE(f.t.run_until([&] { return count(c.received, "HTTP/1.1 200") == 3; }));
  const auto first = c.received.find("later");
  const auto second = c.received.find("now");
  const auto third = c.received.find("later", first + 1);
  CHECK(first < second);
  CHECK(second < third);
  CHECK_FALSE(c.closed);
  CHECK(f.handler.stats().requests == 3);
}

TEST_CASE("The header timeout fires on the loop's wheel: 408 after a trickle, not before",
          "[http][net][timeout]") {
  http::SessionOptions o;
  o.header_timeout = 300ms;
  Fixture f(o);
  RawClient c(&f.t.loop, f.server.port());
  const Duration start = hr_now();
  c.send("GET / HTTP/1.1\r\n");
  for (int i = 0; i < 5 && !c.closed; ++i) {
    f.t.run_for(80ms);
    c.send("X");
  }
  REQUIRE(f.t.run_until([&] { return c.closed; }));
  const Duration took = c.closed_at - start;
  CHECK(took >= 290ms);  // the loop clock is milliseconds; never a tick early
  CHECK(took < 2s);
  CHECK(c.received.rfind("HTTP/1.1 408 ", 0) == 0);
  CHECK(f.handler.stats().header_timeouts == 1);
}

TEST_CASE("Single-loop drain: idle sessions close, in-flight ones finish with Connection: close",
          "[http][net][drain]") {
  Fixture f;
  RawClient idle(&f.t.loop, f.server.port());
  RawClient busy(&f.t.loop, f.server.port());
  idle.send("GET / HTTP/1.1\r\n\r\n");
  REQUIRE(f.t.run_until([&] { return count(idle.received, "HTTP/1.1 200") == 1; }));
  busy.send("GET /later HTTP/1.1\r\n\r\n");
  REQUIRE(f.t.run_until([&] { return f.pending == 1; }));
  bool drained = false;
  f.server.drain(5s, [&] { drained = true; });  // NetHandler::on_drain does the rest
  REQUIRE(f.t.run_until([&] { return drained && idle.closed && busy.closed; }));
  CHECK(busy.received.find("Connection: close\r\n") != std::string::npos);
  CHECK(busy.received.find("later") != std::string::npos);
  CHECK(f.handler.session_count() == 0);
}

TEST_CASE("A client that resets before its answer leaves nothing armed in the wheel",
          "[http][net]") {
  Fixture f;
  const std::size_t baseline = f.t.wheel->wheel().size();
  const int fd = connect_blocking(f.server.port());
  const std::string req = "GET /much-later HTTP/1.1\r\n\r\n";
  REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
  REQUIRE(f.t.run_until([&] { return f.pending == 1; }));
  linger reset{1, 0};  // close with RST: the server sees ECONNRESET, not a half-close
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);
  REQUIRE(f.t.run_until([&] { return f.handler.session_count() == 0; }));
  CHECK(f.pending == 0);  // on_abandon cancelled and freed the 10 s wheel entry
  CHECK(f.t.wheel->wheel().size() <= baseline);
}

TEST_CASE("A half-closed client still gets the answers it asked for", "[http][net]") {
  Fixture f;
  RawClient c(&f.t.loop, f.server.port());
  c.send("GET /later HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  c.shutdown_write();
  REQUIRE(f.t.run_until([&] { return c.closed; }));
  CHECK(count(c.received, "HTTP/1.1 200") == 2);
  CHECK(f.pending == 0);
}
