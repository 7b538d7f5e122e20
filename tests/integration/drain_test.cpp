// Graceful drain: idle connections close at once, in-flight requests finish
// first, the timeout bounds the wait.
#include <heartwheel/net/server.h>

#include "closed_port.h"
#include "net_test_support.h"

using namespace hwtest;
using net::CloseReason;

namespace {

// On "req" begins a request and answers it `delay` later.
struct DelayedResponder : Recorder {
  explicit DelayedResponder(uv_loop_t* loop, Duration delay) : loop_(loop), delay_(delay) {
    data_hook = [this](net::Connection& c, std::string_view data) {
      if (data != "req") return;
      c.begin_request(Duration{0});
      auto* timer = new uv_timer_t;
      uv_timer_init(loop_, timer);
      timer->data = &c;
      timers_[c.id()] = timer;
      uv_timer_start(
          timer,
          [](uv_timer_t* tm) {
            auto* conn = static_cast<net::Connection*>(tm->data);
            conn->write("resp");
            conn->end_request();
          },
          heartwheel::to_uv_millis_ceil(delay_), 0);
    };
    // The response timer dies with its connection.
    close_hook = [this](net::Connection& c, net::CloseReason) {
      auto it = timers_.find(c.id());
      if (it == timers_.end()) return;
      uv_close(reinterpret_cast<uv_handle_t*>(it->second),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
      timers_.erase(it);
    };
  }
  std::map<std::uint64_t, uv_timer_t*> timers_;
  uv_loop_t* loop_;
  Duration delay_;
};

}  // namespace

TEST_CASE("Drain closes idle connections at once and lets in-flight requests finish",
          "[net][drain]") {
  TestLoop t(5ms);
  // The answer takes 1 s: "closed at once" below can then allow a loaded
  // machine's lateness (this process descheduled for a while) and still
  // tell the idle connection's close from one that waited for the request.
  DelayedResponder rec(&t.loop, 1s);
  net::Server server(*t.wheel, rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  RawClient idle(&t.loop, server.port());
  RawClient busy(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 2; }));
  busy.send("req");
  REQUIRE(t.run_until([&] {
    bool in_flight = false;
    server.for_each_connection(
        [&](net::Connection& c) { in_flight = in_flight || c.in_request(); });
    return in_flight;
  }));
  bool drained = false;
  const Duration start = hr_now();
  server.drain(5s, [&] { drained = true; });
  REQUIRE(t.run_until([&] { return idle.closed; }));
  CHECK(hr_now() - start < 600ms);  // did not wait for the request (1 s)
  CHECK_FALSE(busy.closed);
  // No longer listening: the port can be bound (a listener there would
  // refuse the bind), and is held from now on, so that the connect below is
  // refused by this, not by whatever a parallel test may bind there in the
  // second the request still runs.
  const heartwheel::test::ClosedPort stopped(server.port());
  REQUIRE(t.run_until([&] { return drained; }));
  CHECK(busy.received == "resp");
  CHECK(hr_now() - start < 3s);
  CHECK(server.stats().closed(CloseReason::drain) == 2);
  CHECK(server.connection_count() == 0);
  RawClient late(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return late.closed; }));
  CHECK(late.error == UV_ECONNREFUSED);
}

TEST_CASE("Drain closes requests still running at the timeout", "[net][drain]") {
  TestLoop t(5ms);
  DelayedResponder rec(&t.loop, 10s);  // never in time
  net::Server server(*t.wheel, rec, net::ServerOptions{});
  REQUIRE_FALSE(server.listen());
  RawClient busy(&t.loop, server.port());
  REQUIRE(t.run_until([&] { return server.connection_count() == 1; }));
  busy.send("req");
  t.run_for(50ms);
  bool drained = false;
  const Duration start = hr_now();
  server.drain(200ms, [&] { drained = true; });
  REQUIRE(t.run_until([&] { return drained; }));
  CHECK(hr_now() - start >= 195ms);
  CHECK(busy.received.empty());
  CHECK(server.stats().closed(CloseReason::drain) == 1);
}
