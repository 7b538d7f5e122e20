// Responder::set_deadline: a handler's own deadline on its answer, kept in
// the connection's deadline set (no wheel entry of its own). It fires on
// time (never early, within one 1 ms tick of virtual time), its callback
// says whether the connection goes on or closes (with the kind's registered
// reason, after what was written is flushed), and it is gone once the answer
// completes. ManualTimerService advances a virtual clock: no sleeping.
#include "http_harness.h"

using namespace http_test;

namespace {
const char* kAsync = "GET /async HTTP/1.1\r\nHost: x\r\n\r\n";

// An application's kind, as heartwheel-push's token expiry is (net/names.h).
constexpr net::Deadline kStreamExpiry{29};
constexpr net::CloseReason kStreamExpired{58};
constexpr net::CloseReasonName kReasons[] = {{kStreamExpired, "stream_expired"}};
constexpr net::DeadlineName kKinds[] = {{kStreamExpiry, "stream_expiry", kStreamExpired}};
const net::NameRegistrar kNames{kReasons, kKinds};

// A harness with its keep-alive and request timeouts off, so only the
// handler's deadline can end anything; one streamed answer begun.
struct Stream {
  Harness h{GENERATE(RefreshMode::eager, RefreshMode::lazy)};
  Stream() {
    h.options.request_timeout = 0s;
    h.options.keepalive_timeout = 0s;
    h.start();
    h.feed(kAsync);
    REQUIRE(h.held.size() == 1);
    REQUIRE(h.held[0].begin(200, {{"Content-Type", "text/event-stream"}}));
    REQUIRE(h.held[0].write("data: 1\n\n"));
  }
  Responder& r() { return h.held[0]; }
  TimePoint now() { return h.timers.now(); }
};
}  // namespace

TEST_CASE("A handler deadline passes on time, and keep leaves the connection open",
          "[http][timeout]") {
  Stream s;
  int calls = 0;
  REQUIRE(s.r().set_deadline(kStreamExpiry, s.now() + 2s, [&] {
    ++calls;
    CHECK(s.r().write("event: expired\n\n"));
    CHECK(s.r().end());
    return net::DeadlineAction::keep;
  }));
  CHECK(s.h.transport.deadline(kStreamExpiry) == s.now() + 2s);
  s.h.run_for(1999ms);
  CHECK(calls == 0);  // never early
  s.h.run_for(2ms);
  CHECK(calls == 1);
  CHECK_FALSE(s.h.closed());
  CHECK_FALSE(s.r().active());  // the callback ended the answer
  CHECK(s.h.transport.out.find("event: expired") != std::string::npos);
  CHECK(s.h.transport.out.find("0\r\n\r\n") != std::string::npos);  // the chunked end
  s.h.run_for(5s);
  CHECK(calls == 1);  // once
}

TEST_CASE("A handler deadline whose callback says close closes with the kind's reason",
          "[http][timeout]") {
  Stream s;
  REQUIRE(s.r().set_deadline(kStreamExpiry, s.now() + 500ms, [&] {
    CHECK(s.r().write("event: expired\n\n"));
    return net::DeadlineAction::close;
  }));
  s.h.run_for(499ms);
  CHECK_FALSE(s.h.closed());
  s.h.run_for(2ms);
  REQUIRE(s.h.closed());
  CHECK(s.h.transport.last_mode == Transport::CloseMode::kAfterFlush);
  CHECK(s.h.session->close_reason() == kStreamExpired);
  CHECK(s.h.transport.out.find("event: expired") != std::string::npos);  // written before
}

TEST_CASE("A handler deadline is gone once its answer completes, and can be moved or cleared",
          "[http][timeout]") {
  Stream s;
  int calls = 0;
  const auto count = [&] {
    ++calls;
    return net::DeadlineAction::close;
  };
  SECTION("the answer ends first") {
    REQUIRE(s.r().set_deadline(kStreamExpiry, s.now() + 1s, count));
    REQUIRE(s.r().end());
    CHECK(s.h.transport.deadline(kStreamExpiry) == kNever);
    s.h.run_for(3s);
  }
  SECTION("cleared with kNever") {
    REQUIRE(s.r().set_deadline(kStreamExpiry, s.now() + 1s, count));
    REQUIRE(s.r().set_deadline(kStreamExpiry, kNever, count));
    CHECK(s.h.transport.deadline(kStreamExpiry) == kNever);
    s.h.run_for(3s);
  }
  SECTION("moved later: only the second time counts") {
    REQUIRE(s.r().set_deadline(kStreamExpiry, s.now() + 1s, count));
    REQUIRE(s.r().set_deadline(kStreamExpiry, s.now() + 3s, count));
    s.h.run_for(2500ms);
    CHECK(calls == 0);
    s.h.run_for(600ms);
    CHECK(calls == 1);
    CHECK(s.h.closed());
    return;
  }
  CHECK(calls == 0);
  CHECK_FALSE(s.h.closed());
}

TEST_CASE("set_deadline refuses HTTP's and net's kinds and an inactive answer",
          "[http][timeout]") {
  Stream s;
  const auto never = [] { return net::DeadlineAction::keep; };
  CHECK_FALSE(s.r().set_deadline(http::deadline::keepalive_timeout, s.now() + 1s, never));
  CHECK_FALSE(s.r().set_deadline(http::deadline::header_timeout, s.now() + 1s, never));
  CHECK_FALSE(s.r().set_deadline(net::Deadline::request_timeout, s.now() + 1s, never));
  CHECK_FALSE(s.r().set_deadline(net::Deadline::ping, s.now() + 1s, never));
  REQUIRE(s.r().end());
  CHECK_FALSE(s.r().set_deadline(kStreamExpiry, s.now() + 1s, never));
  CHECK(s.h.transport.deadline(kStreamExpiry) == kNever);
}

TEST_CASE("An HTTP/1.0 stream ended by a handler deadline that says close closes for its reason",
          "[http][timeout]") {
  // A close-delimited answer ends its connection anyway (protocol_close);
  // ended inside the deadline's callback, the reason is the deadline's
  // whatever the callback returns (the end closed it).
  Harness h(GENERATE(RefreshMode::eager, RefreshMode::lazy));
  h.options.request_timeout = 0s;
  h.start();
  h.feed("GET /async HTTP/1.0\r\n\r\n");
  REQUIRE(h.held.size() == 1);
  Responder& r = h.held[0];
  REQUIRE(r.begin(200, {{"Content-Type", "text/event-stream"}}));
  const bool closes = GENERATE(true, false);
  REQUIRE(r.set_deadline(kStreamExpiry, h.timers.now() + 1s, [&] {
    CHECK(r.write("event: expired\n\n"));
    CHECK(r.end());
    return closes ? net::DeadlineAction::close : net::DeadlineAction::keep;
  }));
  h.run_for(1001ms);
  REQUIRE(h.closed());
  CHECK(h.session->close_reason() == kStreamExpired);
}
