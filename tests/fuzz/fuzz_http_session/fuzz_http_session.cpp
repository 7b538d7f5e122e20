// Fuzz target: http::Session fed from memory on a ManualTimerService (no
// sockets). This is the only fuzz file that touches the session's API; when
// that API changes, only this file changes.
//
// Input: plan:u8 | options:u8 | bytes from the peer (common/fuzz_input.h).
//   options bits 0-1  max_pipelined 1, 2, 4 or 32
//           bit 2     small limits (256 header bytes, 64 body bytes)
//           bit 3     the peer stops reading: the transport turns unwritable now
//                     and then (the session must stop parsing), writable again
//                     at the end
//           bit 4     the peer half-closes (on_eof) after its last byte
//           bit 5     drain() after the first read
//           bits 6-7  virtual time between reads: 0, 1 ms, 250 ms or random up to 12 s
//   and, from the plan's generator: a request limit per connection (1-3), and
//   held requests answered only after the request timeout (30 s) has
//   answered them with 503.
// The handler answers by path like tests/unit/http_harness.cpp: /async is held
// and answered later (out of order), /echo echoes the body, /stream streams a
// chunked answer, /stream-drop abandons one half-way, /throw throws, /drop
// never answers, anything else gets 200.
// Checked after the last read, once held answers are given and 60 virtual
// seconds have passed: the session closed (every state has a timeout), it
// asked the transport to close at most twice, at most the transport's one
// wheel entry is left, and the output starts as an HTTP/1.1 response.
// The transport is tests/unit/http_memory_transport.h: the session's slots in
// a net::DeadlineTimer, as on a real connection.
#include <heartwheel/http/session.h>
#include <heartwheel/timer/virtual_clock.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/fuzz_input.h"
#include "../unit/http_memory_transport.h"

using namespace heartwheel;
using namespace heartwheel::http;
using namespace std::chrono_literals;

namespace {

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
  http_test::MemoryTransport transport(timers);
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

  auto session = std::make_unique<Session>(options, handler, transport, stats);
  transport.attach(session.get());
  // A peer that stops reading makes the connection unwritable now and then.
  auto flip = [&] {
    if (stalled && reads.random() % 3 == 0) transport.set_writable(!transport.writable());
  };
  session->start();
  std::string_view piece;
  bool first = true;
  while (reads.next(piece)) {
    session->on_data(piece);
    flip();
    if (first && (opts & 32u)) session->drain();
    first = false;
    // Answer the newest held request now and then: out of order on purpose.
    if (!held.empty() && reads.random() % 2 == 0) answer_newest();
    timers.run_for(step(opts >> 6, reads));
  }
  if (opts & 16u) session->on_eof();
  if (answer_late) timers.run_for(40s);
  while (!held.empty()) answer_newest();
  transport.set_writable(true);
  timers.run_for(60s);

  FUZZ_CHECK(session->closed());
  FUZZ_CHECK(transport.closes >= 1 && transport.closes <= 2);
  FUZZ_CHECK(timers.wheel().size() <= 1);
  if (!transport.out.empty()) FUZZ_CHECK(transport.out.rfind("HTTP/1.1 ", 0) == 0);
  transport.attach(nullptr);
  session.reset();
  return 0;
}
