// Fuzz target: http::Session fed from memory on a ManualTimerService (no
// sockets). This is the only fuzz file that touches the session's API; when
// that API changes, only this file changes.
//
// Input: plan:u8 | options:u8 | bytes from the peer (common/fuzz_input.h).
//   options bits 0-1  max_pipelined 1, 2, 4 or 32
//           bit 2     small limits (256 header bytes, 64 body bytes)
//           bit 3     the transport never reports writes done (a stalled reader)
//           bit 4     the peer half-closes (on_eof) after its last byte
//           bit 5     drain() after the first read
//           bits 6-7  virtual time between reads: 0, 1 ms, 250 ms or random up to 12 s
//   and, from the plan's generator: a request limit per connection (1-3),
//   partial write reports, and held requests answered only after the request
//   timeout (30 s) has answered them with 503.
// The handler answers by path like tests/unit/http_harness.cpp: /async is held
// and answered later (out of order), /echo echoes the body, /stream streams a
// chunked answer, /stream-drop abandons one half-way, /throw throws, /drop
// never answers, anything else gets 200.
// Checked after the last read, once held answers are given and 60 virtual
// seconds have passed: the session closed (every state has a timeout), it
// asked the transport to close at most twice (once + a send-timeout abort),
// at most one wheel entry is left, and the output starts as an HTTP/1.1
// response.
#include <heartwheel/http/session.h>
#include <heartwheel/virtual_clock.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/fuzz_input.h"

using namespace heartwheel;
using namespace heartwheel::http;
using namespace std::chrono_literals;

namespace {

struct MemoryTransport final : Transport {
  void send(std::string bytes) override {
    if (out.size() < 64) out += bytes.substr(0, 64);
    unacked += bytes.size();
  }
  void close(CloseMode) override { ++closes; }
  void set_reading(bool) override {}

  std::string out;  // the first bytes written, enough to check the first status line
  std::size_t unacked = 0;
  int closes = 0;
};

Duration step(unsigned mode, fuzz::Reads& reads) {
  switch (mode) {
    case 0:
      return 0ms;
    case 1:
      return 1ms;
    case 2:
      return 250ms;
    default:
      return std::chrono::milliseconds(reads.random() % 12000);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const unsigned opts = data[1];
  fuzz::Reads reads(data[0], fuzz::as_view(data + 2, size - 2));
  const bool stalled = opts & 8u;

  ManualTimerService timers{1ms};
  SessionOptions options;
  constexpr std::size_t kPipelined[] = {1, 2, 4, 32};
  options.max_pipelined = kPipelined[opts & 3u];
  if (opts & 4u) {
    options.max_header_bytes = 256;
    options.max_body_bytes = 64;
  }
  // More choices from the input's generator, so they vary with the input too.
  if (reads.random() % 4 == 0) options.max_requests_per_connection = 1 + reads.random() % 3;
  const bool answer_late = reads.random() % 4 == 0;  // after the request timeout answered 503
  SessionStats stats;
  MemoryTransport transport;
  std::vector<Responder> held;
  const Handler handler = [&held](const Request& req, Responder r) {
    const auto path = req.path();
    if (path == "/async") {
      held.push_back(std::move(r));
    } else if (path == "/echo") {
      r.respond(200, req.body);
    } else if (path == "/stream" || path == "/stream-drop") {
      r.begin(200, {{"Content-Type", "text/plain"}});
      r.write("hello ");
      if (path == "/stream") {
        r.write("world");
        r.end();
      }
    } else if (path == "/throw") {
      throw std::runtime_error("handler bug");
    } else if (path != "/drop") {
      r.respond(200, "hello\n");
    }
  };

  // Taken out of `held` before answering: an answer may let the session parse
  // the next pipelined requests, whose handler calls push onto `held`.
  auto answer_newest = [&held] {
    Responder r = std::move(held.back());
    held.pop_back();
    r.respond(200, "late");
  };

  auto session = std::make_unique<Session>(timers, options, handler, transport, stats);
  // The transport reports writes: all of them, or now and then half (progress
  // that resets the send timeout without finishing).
  auto ack = [&](bool all) {
    if (stalled || transport.unacked == 0) return;
    std::size_t n = transport.unacked;
    if (!all && reads.random() % 4 == 0) n = (n + 1) / 2;
    transport.unacked -= n;
    session->on_sent(n);
  };
  session->start();
  std::string_view piece;
  bool first = true;
  while (reads.next(piece)) {
    session->on_data(piece);
    ack(false);
    if (first && (opts & 32u)) session->drain();
    first = false;
    // Answer the newest held request now and then: out of order on purpose.
    if (!held.empty() && reads.random() % 2 == 0) answer_newest();
    timers.run_for(step(opts >> 6, reads));
    ack(false);
  }
  if (opts & 16u) session->on_eof();
  if (answer_late) timers.run_for(40s);
  while (!held.empty()) answer_newest();
  ack(true);
  timers.run_for(60s);
  ack(true);

  FUZZ_CHECK(session->closed());
  FUZZ_CHECK(transport.closes >= 1 && transport.closes <= 2);
  FUZZ_CHECK(timers.wheel().size() <= 1);
  if (!transport.out.empty()) FUZZ_CHECK(transport.out.rfind("HTTP/1.1 ", 0) == 0);
  session.reset();
  return 0;
}
