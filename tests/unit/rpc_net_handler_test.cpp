// rpc::NetHandler on real net::Connections driven by heartwheel::testing::Host:
// a socket pair carries the frames, a manual clock the time, so heartbeats,
// call deadlines and drains are checked to the millisecond without sleeping.
// The test plays the peer with raw frames (FrameDecoder / encode_frame).
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/rpc/frame.h>
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::errc;
using heartwheel::kNever;
using heartwheel::TimePoint;
using heartwheel::testing::Host;
using heartwheel::testing::Peer;
using namespace heartwheel::rpc;
namespace net = heartwheel::net;

namespace {

struct Frame {
  FrameType type;
  std::uint64_t id;
  std::string payload;
};

// Every frame in what the peer received since the last call.
std::vector<Frame> frames_of(Peer& peer) {
  const std::string bytes = peer.received();
  FrameDecoder decoder;
  std::string_view in = bytes;
  std::error_code ec;
  std::vector<Frame> out;
  while (auto f = decoder.next(in, ec)) out.push_back({f->type, f->id, std::string(f->payload)});
  REQUIRE(!ec);
  REQUIRE(decoder.buffered() == 0);
  return out;
}

NetHandlerOptions heartbeat_every(Duration interval) {
  NetHandlerOptions o;
  o.heartbeat.interval = interval;
  o.heartbeat.jitter = 0;
  return o;
}

// Serves REQUEST by echoing the payload at once.
NetHandlerOptions echo_server(Duration heartbeat = Duration{0}) {
  NetHandlerOptions o = heartbeat_every(heartbeat);
  o.on_request = [](const Request& req, Reply reply) { reply.respond(req.payload); };
  return o;
}

// Keeps every Reply to answer later.
struct Deferred {
  NetHandlerOptions options(Duration heartbeat = Duration{0}) {
    NetHandlerOptions o = heartbeat_every(heartbeat);
    o.on_request = [this](const Request& req, Reply reply) {
      payloads.emplace_back(req.payload);
      replies.push_back(std::move(reply));
    };
    return o;
  }
  std::vector<Reply> replies;
  std::vector<std::string> payloads;
};

struct Completion {
  std::uint64_t id;
  CallStatus status;
  std::string payload;
  Duration elapsed;
  std::error_code reason;
};

// A calling side that records its completions.
struct Caller {
  NetHandlerOptions options(Duration heartbeat = Duration{0}) {
    NetHandlerOptions o = heartbeat_every(heartbeat);
    o.on_call_done = [this](const CallCompletion& d) {
      done.push_back({d.id, d.status, std::string(d.payload), d.elapsed, d.reason});
    };
    return o;
  }
  std::vector<Completion> done;
};

// A wheel entry running a function (an application's timer).
struct Hook final : heartwheel::TimerEntry {
  explicit Hook(std::function<void()> f) : TimerEntry(&fire), fn(std::move(f)) {}
  static void fire(TimerEntry& e) { static_cast<Hook&>(e).fn(); }
  std::function<void()> fn;
};

std::uint64_t call(NetHandler& h, Peer& peer, std::string_view payload, Duration timeout) {
  std::error_code ec;
  const auto id = h.call(*peer.connection(), payload, timeout, nullptr, ec);
  REQUIRE(!ec);
  REQUIRE(id != 0);
  return id;
}

}  // namespace

// ---- heartbeat -------------------------------------------------------------------

TEST_CASE("The RPC handler pings after an interval without traffic and arms the pong slot",
          "[rpc][handler][heartbeat]") {
  NetHandler handler(heartbeat_every(1s));
  Host host;
  auto& peer = host.open(handler);
  host.run_for(999ms);
  CHECK(peer.received().empty());
  host.run_for(1ms);
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 1);
  CHECK(f[0].type == FrameType::ping);
  CHECK(f[0].id == 1);
  CHECK(f[0].payload.size() == kPingPayloadSize);
  const HeartbeatInfo hb = handler.heartbeat(*peer.connection());
  CHECK(hb.pings_sent == 1);
  CHECK(hb.pong_due == TimePoint{} + 3s);  // the last byte read (none: the open) + 3 intervals
  CHECK(handler.stats().pings_sent == 1);
}

TEST_CASE("Traffic both ways postpones the RPC ping by a whole interval",
          "[rpc][handler][heartbeat]") {
  NetHandler handler(echo_server(1s));
  Host host;
  auto& peer = host.open(handler);
  host.run_for(500ms);
  peer.send(encode_frame(FrameType::request, 7, "x"));  // read and answered at 0.5 s
  CHECK(frames_of(peer).size() == 1);
  host.run_for(999ms);  // 1.499 s
  CHECK(peer.received().empty());
  host.run_for(1ms);
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 1);
  CHECK(f[0].type == FrameType::ping);
}

TEST_CASE("A PONG clears the pong slot and measures the heartbeat round trip",
          "[rpc][handler][heartbeat]") {
  NetHandlerOptions o = heartbeat_every(1s);
  std::vector<Duration> rtts;
  o.on_heartbeat_rtt = [&](net::Connection&, Duration rtt) { rtts.push_back(rtt); };
  NetHandler handler(std::move(o));
  Host host;
  auto& peer = host.open(handler);
  host.run_for(1s);
  const auto ping = frames_of(peer);
  REQUIRE(ping.size() == 1);
  CHECK(handler.heartbeat(*peer.connection()).pong_due != kNever);
  host.run_for(30ms);
  peer.send(encode_frame(FrameType::pong, ping[0].id, ping[0].payload));
  const HeartbeatInfo hb = handler.heartbeat(*peer.connection());
  CHECK(hb.pong_due == kNever);
  CHECK(hb.last_rtt == 30ms);
  REQUIRE(rtts.size() == 1);
  CHECK(rtts[0] == 30ms);
  CHECK(handler.stats().pongs_received == 1);
  host.run_for(2999ms);  // silent again: pinged at 2 s and 3 s, closed 3 s after its PONG
  CHECK(peer.open());
  host.run_for(1ms);
  CHECK(peer.close_reason() == net::CloseReason::pong_timeout);
}

TEST_CASE(
    "A silent peer is closed with pong_timeout three intervals after its last byte, not "
    "earlier",
    "[rpc][handler][heartbeat]") {
  NetHandler handler(heartbeat_every(1s));
  Host host;
  auto& peer = host.open(handler);
  SECTION("silent from the start: pings at 1 s and 2 s, closed at 3 s") {
    host.run_for(2999ms);
    const auto f = frames_of(peer);
    REQUIRE(f.size() == 2);
    CHECK(f[0].type == FrameType::ping);
    CHECK(f[1].type == FrameType::ping);
    CHECK(peer.open());
    host.run_for(1ms);
    CHECK(peer.close_reason() == net::CloseReason::pong_timeout);
  }
  SECTION("last byte at 0.5 s: closed at 3.5 s") {
    host.run_for(500ms);
    peer.send(encode_frame(FrameType::ping, 1, "12345678"));  // answered: we wrote at 0.5 s too
    host.run_for(2999ms);
    CHECK(peer.open());
    host.run_for(1ms);
    CHECK(peer.close_reason() == net::CloseReason::pong_timeout);
  }
  CHECK(host.stats().closed(net::CloseReason::pong_timeout) == 1);
  CHECK(handler.stats().pong_timeouts == 1);
}

TEST_CASE("Any frame from the peer counts as life, not only a PONG", "[rpc][handler][heartbeat]") {
  NetHandler handler(echo_server(1s));
  Host host;
  auto& peer = host.open(handler);
  for (int i = 0; i < 10; ++i) {
    host.run_for(1500ms);  // a ping went out at +1 s and is never answered
    CHECK(handler.heartbeat(*peer.connection()).pong_due != kNever);
    peer.send(encode_frame(FrameType::request, static_cast<std::uint64_t>(i), "alive"));
    CHECK(handler.heartbeat(*peer.connection()).pong_due == kNever);
  }
  CHECK(peer.open());
  CHECK(handler.stats().pongs_received == 0);
  CHECK(handler.stats().pings_sent >= 10);
}

TEST_CASE("A side that keeps writing to a peer that says nothing pings it and closes it",
          "[rpc][handler][heartbeat]") {
  // Calls every 100 ms: never write-idle, but read-idle after the first
  // second, so a ping goes out (Dubbo's rule) and the pong slot closes.
  Caller caller;
  NetHandler handler(caller.options(1s));
  Host host;
  auto& peer = host.open(handler);
  int pings = 0;
  for (int i = 0; i < 29; ++i) {
    call(handler, peer, "q", 10s);
    host.run_for(100ms);
    for (const auto& f : frames_of(peer)) pings += f.type == FrameType::ping ? 1 : 0;
  }
  CHECK(pings == 2);  // at 1 s and 2 s
  CHECK(peer.open());
  host.run_for(100ms);  // 3 s after the last (and only) byte read: the open
  CHECK(peer.close_reason() == net::CloseReason::pong_timeout);
  REQUIRE(caller.done.size() == 29);
  for (const auto& d : caller.done) {
    CHECK(d.status == CallStatus::failed);
    CHECK(d.reason == errc::closed);
  }
}

TEST_CASE("With heartbeats off the RPC handler neither pings nor closes a silent peer",
          "[rpc][handler][heartbeat]") {
  NetHandler handler(heartbeat_every(Duration{0}));
  Host host;
  auto& peer = host.open(handler);
  host.run_for(60s);
  CHECK(peer.received().empty());
  CHECK(peer.open());
  CHECK(peer.connection()->deadline(net::Deadline::ping) == kNever);
}

TEST_CASE("A PING from the peer is answered with a PONG carrying its id and payload",
          "[rpc][handler]") {
  NetHandler handler(heartbeat_every(Duration{0}));
  Host host;
  auto& peer = host.open(handler);
  peer.send(encode_frame(FrameType::ping, 42, "abcdefgh"));
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 1);
  CHECK(f[0].type == FrameType::pong);
  CHECK(f[0].id == 42);
  CHECK(f[0].payload == "abcdefgh");
  CHECK(handler.stats().pings_received == 1);
}

TEST_CASE("Heartbeat options are validated like net::HeartbeatConfig's", "[rpc][handler][heartbeat]") {
  NetHandlerOptions o;
  o.heartbeat = {.interval = 1s, .timeout = 1500ms};
  CHECK_THROWS_WITH(NetHandler{o}, Catch::Contains("under twice the interval"));
  o.heartbeat = {.interval = -1s};
  CHECK_THROWS_AS(NetHandler{o}, std::invalid_argument);
  o.heartbeat = {.interval = Duration{0}};
  o.max_frame_length = 8;
  CHECK_THROWS_WITH(NetHandler{o}, Catch::Contains("max_frame_length"));
}

// ---- batched writes -----------------------------------------------------------

TEST_CASE("Answers produced in one loop iteration leave in one write", "[rpc][handler][batch]") {
  SECTION("three pipelined requests read together") {
    NetHandler handler(echo_server());
    Host host;
    auto& peer = host.open(handler);
    peer.send(encode_frame(FrameType::request, 1, "a") + encode_frame(FrameType::request, 2, "b") +
              encode_frame(FrameType::request, 3, "c"));
    const auto f = frames_of(peer);
    REQUIRE(f.size() == 3);
    CHECK(f[0].id == 1);
    CHECK(f[2].payload == "c");
    CHECK(handler.stats().writes == 1);
    CHECK(handler.stats().frames_sent == 3);
    // Two reads in two iterations: two writes.
    peer.send(encode_frame(FrameType::request, 4, "d"));
    peer.send(encode_frame(FrameType::request, 5, "e"));
    CHECK(frames_of(peer).size() == 2);
    CHECK(handler.stats().writes == 3);
  }
  SECTION("answers given from a wheel callback, with the ping due at the same time") {
    Deferred app;
    NetHandler handler(app.options(1s));
    Host host;
    auto& peer = host.open(handler);
    peer.send(encode_frame(FrameType::request, 1, "a") + encode_frame(FrameType::request, 2, "b"));
    REQUIRE(app.replies.size() == 2);
    CHECK(handler.stats().writes == 0);
    Hook answer_both([&] {
      for (auto& r : app.replies) CHECK(r.respond("late"));
    });
    host.timers().schedule(answer_both, 1s);
    host.run_for(1s);  // the ping and both answers: one iteration, one batch
    const auto f = frames_of(peer);
    REQUIRE(f.size() == 3);
    int pings = 0, responses = 0;
    for (const auto& x : f) {
      pings += x.type == FrameType::ping ? 1 : 0;
      responses += x.type == FrameType::response ? 1 : 0;
    }
    CHECK(pings == 1);
    CHECK(responses == 2);
    CHECK(handler.stats().writes == 1);
  }
  SECTION("flush() writes a batch at once") {
    Caller caller;
    NetHandler handler(caller.options());
    Host host;
    auto& peer = host.open(handler);
    call(handler, peer, "now", 1s);
    CHECK(handler.stats().writes == 0);
    handler.flush(*peer.connection());
    CHECK(handler.stats().writes == 1);
    CHECK(frames_of(peer).size() == 1);
  }
}

// ---- calls ------------------------------------------------------------------

TEST_CASE("A call completes once with the reply's payload, ERROR completes it as error",
          "[rpc][handler][calls]") {
  Caller caller;
  NetHandler handler(caller.options());
  Host host;
  auto& peer = host.open(handler);
  const auto a = call(handler, peer, "ping me", 1s);
  const auto b = call(handler, peer, "fail me", 1s);
  CHECK(handler.in_flight(*peer.connection()) == 2);
  CHECK(peer.connection()->in_request());
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 2);
  CHECK(f[0].type == FrameType::request);
  CHECK(f[0].id == a);
  CHECK(f[1].payload == "fail me");
  host.run_for(40ms);
  peer.send(encode_frame(FrameType::error, b, "no") + encode_frame(FrameType::response, a, "pong"));
  REQUIRE(caller.done.size() == 2);
  CHECK(caller.done[0].id == b);
  CHECK(caller.done[0].status == CallStatus::error);
  CHECK(caller.done[0].payload == "no");
  CHECK(caller.done[1].status == CallStatus::ok);
  CHECK(caller.done[1].payload == "pong");
  CHECK(caller.done[1].elapsed == 40ms);
  CHECK(handler.in_flight(*peer.connection()) == 0);
  CHECK_FALSE(peer.connection()->in_request());
  CHECK(handler.stats().replies == 2);
}

TEST_CASE("A call's deadline fires once and a reply after it is counted late, not delivered",
          "[rpc][handler][calls]") {
  Caller caller;
  NetHandler handler(caller.options());
  Host host;
  auto& peer = host.open(handler);
  const auto id = call(handler, peer, "slow", 100ms);
  host.run_for(99ms);
  CHECK(caller.done.empty());
  host.run_for(1ms);
  REQUIRE(caller.done.size() == 1);
  CHECK(caller.done[0].status == CallStatus::timed_out);
  CHECK(caller.done[0].reason == errc::timed_out);
  peer.send(encode_frame(FrameType::response, id, "too late"));
  host.run_for(1s);
  CHECK(caller.done.size() == 1);
  CHECK(handler.call_stats().late_replies == 1);
  CHECK(handler.call_stats().timed_out == 1);
  CHECK(peer.open());  // a late reply is no protocol error
}

TEST_CASE("A reply for another connection's call is not delivered", "[rpc][handler][calls]") {
  Caller caller;
  NetHandler handler(caller.options());
  Host host;
  auto& first = host.open(handler);
  auto& second = host.open(handler);
  const auto id = call(handler, first, "mine", 1s);
  second.send(encode_frame(FrameType::response, id, "not yours"));
  CHECK(caller.done.empty());
  CHECK(handler.call_stats().unknown_replies == 1);
  first.send(encode_frame(FrameType::response, id, "yours"));
  REQUIRE(caller.done.size() == 1);
  CHECK(caller.done[0].payload == "yours");
}

TEST_CASE("A closing connection fails its calls and abandons the answers it is owed",
          "[rpc][handler][calls]") {
  Caller caller;
  Deferred app;
  NetHandlerOptions o = caller.options();
  o.on_request = app.options().on_request;
  NetHandler handler(std::move(o));
  Host host;
  auto& peer = host.open(handler);
  auto& other = host.open(handler);
  call(handler, peer, "a", 10s);
  call(handler, other, "b", 10s);
  peer.send(encode_frame(FrameType::request, 9, "owed"));
  REQUIRE(app.replies.size() == 1);
  int abandoned = 0;
  app.replies[0].on_abandon([&] { ++abandoned; });
  peer.connection()->close(net::CloseReason::local);
  host.poll();
  CHECK_FALSE(peer.open());
  REQUIRE(caller.done.size() == 1);  // only the call of that connection
  CHECK(caller.done[0].status == CallStatus::failed);
  CHECK(caller.done[0].reason == errc::closed);
  CHECK(abandoned == 1);
  CHECK_FALSE(app.replies[0].active());
  CHECK_FALSE(app.replies[0].respond("too late"));
  CHECK(handler.stats().dropped_replies == 1);
  CHECK(handler.calls_in_flight() == 1);
  std::error_code ec;
  CHECK(handler.call(*other.connection(), "c", 1s, nullptr, ec) != 0);
}

TEST_CASE("A Reply of a closing connection refuses to answer and is abandoned by the close",
          "[rpc][handler][serve]") {
  Deferred app;
  NetHandler handler(app.options());
  Host host;
  auto& peer = host.open(handler);
  peer.send(encode_frame(FrameType::request, 1, "a") + encode_frame(FrameType::request, 2, "b"));
  REQUIRE(app.replies.size() == 2);
  peer.connection()->close(net::CloseReason::local);  // on_close comes on a later iteration
  CHECK_FALSE(app.replies[0].active());
  CHECK_FALSE(app.replies[0].respond("too late"));
  int abandoned = 0;
  app.replies[0].on_abandon([&] { ++abandoned; });
  app.replies.pop_back();  // destroyed meanwhile: no ERROR, counted as dropped
  host.poll();
  CHECK_FALSE(peer.open());
  CHECK(abandoned == 1);
  CHECK(handler.stats().dropped_replies == 2);
  CHECK(handler.stats().unanswered == 0);
  CHECK(handler.stats().errors_sent == 0);
}

TEST_CASE("call() refuses with an error code and sends nothing", "[rpc][handler][calls]") {
  SECTION("without on_call_done") {
    NetHandler handler(echo_server());
    Host host;
    auto& peer = host.open(handler);
    std::error_code ec;
    CHECK(handler.call(*peer.connection(), "x", 1s, nullptr, ec) == 0);
    CHECK(ec == errc::invalid_argument);
    CHECK(peer.received().empty());
  }
  SECTION("over max_calls_in_flight") {
    Caller caller;
    NetHandlerOptions o = caller.options();
    o.max_calls_in_flight = 1;
    NetHandler handler(std::move(o));
    Host host;
    auto& peer = host.open(handler);
    call(handler, peer, "x", 1s);
    std::error_code ec;
    CHECK(handler.call(*peer.connection(), "y", 1s, nullptr, ec) == 0);
    CHECK(ec == errc::limit_reached);
    CHECK(frames_of(peer).size() == 1);
    CHECK(handler.call_stats().refused == 1);
  }
}

// ---- serving ------------------------------------------------------------------

TEST_CASE("A Reply dropped without an answer sends ERROR, a second answer is refused",
          "[rpc][handler][serve]") {
  int calls = 0;
  NetHandlerOptions o;
  o.heartbeat.interval = Duration{0};
  o.on_request = [&](const Request& req, Reply reply) {
    if (++calls == 2) {
      CHECK(reply.id() == req.id);
      CHECK(reply.fail("bad request"));
      CHECK_FALSE(reply.respond("twice"));
    }
  };  // the first is dropped unanswered
  NetHandler handler(std::move(o));
  Host host;
  auto& peer = host.open(handler);
  peer.send(encode_frame(FrameType::request, 1, "x") + encode_frame(FrameType::request, 2, "y"));
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 2);
  CHECK(f[0].type == FrameType::error);
  CHECK(f[0].payload == "request not answered");
  CHECK(f[1].type == FrameType::error);
  CHECK(f[1].payload == "bad request");
  CHECK(handler.stats().unanswered == 1);
  CHECK(handler.stats().errors_sent == 2);
}

TEST_CASE("Replies move and may be answered in any order", "[rpc][handler][serve]") {
  Deferred app;
  NetHandler handler(app.options());
  Host host;
  auto& peer = host.open(handler);
  for (std::uint64_t id = 1; id <= 3; ++id) peer.send(encode_frame(FrameType::request, id, "p"));
  REQUIRE(app.replies.size() == 3);
  CHECK(handler.in_flight(*peer.connection()) == 3);
  Reply moved = std::move(app.replies[1]);
  CHECK_FALSE(app.replies[1].active());
  app.replies.clear();  // the other two: dropped, answered with ERROR
  CHECK(handler.in_flight(*peer.connection()) == 1);
  CHECK(moved.respond("second"));
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 3);
  CHECK(f[2].id == 2);
  CHECK(f[2].payload == "second");
  CHECK(handler.in_flight(*peer.connection()) == 0);
}

TEST_CASE("Frames a handler does not take are counted as unexpected and ignored",
          "[rpc][handler][serve]") {
  NetHandler handler(heartbeat_every(Duration{0}));  // neither serves nor calls
  Host host;
  auto& peer = host.open(handler);
  peer.send(encode_frame(FrameType::request, 1, "x") + encode_frame(FrameType::response, 2, "y"));
  CHECK(peer.received().empty());
  CHECK(peer.open());
  CHECK(handler.stats().unexpected_frames == 2);
}

TEST_CASE("A bad frame closes the connection with protocol_error after the answers before it",
          "[rpc][handler][frame]") {
  NetHandlerOptions o = echo_server();
  o.max_frame_length = 64;
  NetHandler handler(std::move(o));
  Host host;
  auto& peer = host.open(handler);
  auto& other = host.open(handler);
  peer.send(encode_frame(FrameType::request, 1, "ok") +
            encode_frame(FrameType::request, 2, std::string(100, 'x')));
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 1);
  CHECK(f[0].payload == "ok");
  CHECK(peer.close_reason() == net::CloseReason::protocol_error);
  CHECK(handler.stats().protocol_errors == 1);
  CHECK(handler.stats().frames_too_large == 1);
  std::string bad_type = encode_frame(FrameType::request, 3, "z");
  bad_type[kLengthFieldSize] = 9;
  other.send(bad_type);
  CHECK(other.close_reason() == net::CloseReason::protocol_error);
  CHECK(handler.stats().frames_too_large == 1);
}

// ---- finishing ----------------------------------------------------------------

TEST_CASE("A drain refuses new requests, finishes the answer in flight, then closes",
          "[rpc][handler][drain]") {
  Deferred app;
  NetHandler handler(app.options());
  Host host;
  auto& idle = host.open(handler);
  auto& busy = host.open(handler);
  busy.send(encode_frame(FrameType::request, 7, "in flight"));
  REQUIRE(app.replies.size() == 1);
  CHECK(busy.connection()->in_request());
  handler.drain_all();  // what Server::drain does through on_drain
  host.poll();
  CHECK(idle.close_reason() == net::CloseReason::drain);  // owed nothing
  CHECK(busy.open());
  busy.send(encode_frame(FrameType::request, 8, "too late"));
  host.run_for(100ms);
  CHECK(busy.open());
  CHECK(app.replies[0].respond("done"));
  const auto f = frames_of(busy);
  REQUIRE(f.size() == 2);
  CHECK(f[0].type == FrameType::error);
  CHECK(f[0].id == 8);
  CHECK(f[0].payload == "server is draining");
  CHECK(f[1].type == FrameType::response);
  CHECK(f[1].id == 7);
  CHECK(busy.close_reason() == net::CloseReason::drain);
  CHECK(handler.stats().refused_draining == 1);
  CHECK(app.replies.size() == 1);  // the refused request never reached the application
}

TEST_CASE("A draining caller refuses new calls and closes once its calls are done",
          "[rpc][handler][drain]") {
  Caller caller;
  NetHandler handler(caller.options());
  Host host;
  auto& peer = host.open(handler);
  const auto id = call(handler, peer, "a", 1s);
  handler.on_drain(*peer.connection());
  std::error_code ec;
  CHECK(handler.call(*peer.connection(), "b", 1s, nullptr, ec) == 0);
  CHECK(ec == errc::shutting_down);
  CHECK(frames_of(peer).size() == 1);
  host.run_for(10ms);
  CHECK(peer.open());
  peer.send(encode_frame(FrameType::response, id, "a"));
  host.poll();
  REQUIRE(caller.done.size() == 1);
  CHECK(caller.done[0].status == CallStatus::ok);
  CHECK(peer.close_reason() == net::CloseReason::drain);
}

TEST_CASE("After the peer half-closes, owed answers still go out, then the connection closes",
          "[rpc][handler][drain]") {
  Deferred app;
  NetHandler handler(app.options());
  Host host;
  auto& peer = host.open(handler);
  peer.send(encode_frame(FrameType::request, 1, "last words"));
  peer.shutdown_write();
  CHECK(peer.open());
  host.run_for(50ms);
  REQUIRE(app.replies.size() == 1);
  CHECK(app.replies[0].respond("heard"));
  const auto f = frames_of(peer);
  REQUIRE(f.size() == 1);
  CHECK(f[0].payload == "heard");
  CHECK(peer.close_reason() == net::CloseReason::peer_closed);
}
