// Seeded random input for the llhttp glue: mutated and randomly split
// pipelines of valid requests, with late, refused and out-of-order answers,
// writability flips and drains, checked for well-formed output (every response
// parses, statuses are from the known set, the session either stays open or
// closed exactly once). Runs under ASan+UBSan with the unit label. On failure
// the seed and the input are printed.
#include <random>
#include <set>

#include "http_harness.h"

using namespace http_test;

namespace {

const char* const kPieces[] = {
    "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /async HTTP/1.1\r\n\r\n",
    "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
    "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "POST /echo HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nxyz",
    "GET /stream HTTP/1.1\r\n\r\n",
    "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    "GET /throw HTTP/1.1\r\n\r\n",
};

std::string random_input(std::mt19937& rng) {
  std::string s;
  const int n = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) s += kPieces[rng() % std::size(kPieces)];
  const int mutations = static_cast<int>(rng() % 4);
  for (int i = 0; i < mutations && !s.empty(); ++i) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 3) {
      case 0:
        s[at] = static_cast<char>(rng() % 256);
        break;
      case 1:
        s.erase(at, 1 + rng() % 8);
        break;
      default:
        s.insert(at, std::string(1 + rng() % 4, static_cast<char>(rng() % 256)));
        break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("Random and mutated pipelines never produce malformed output", "[http][fuzz]") {
  const std::set<int> known = {100, 200, 400, 408, 413, 414, 417, 431, 500, 503};
  std::mt19937 rng(20261122);
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string input = random_input(rng);
    Harness h;
    h.options.max_header_bytes = 200;
    h.options.max_body_bytes = 64;
    h.options.max_pipelined = 1 + rng() % 4;
    h.options.max_buffered_bytes = 1 + rng() % 16;
    h.start();
    std::size_t pos = 0;
    while (pos < input.size()) {
      const std::size_t n = 1 + rng() % 40;
      h.feed(std::string_view(input).substr(pos, n));
      pos += n;
      // Answer held requests now and then, sometimes out of order, sometimes
      // with a header the session must refuse.
      if (!h.held.empty() && rng() % 2 == 0) {
        const std::size_t k = rng() % h.held.size();
        if (rng() % 5 == 0)
          h.held[k].respond(Response{200, {{"X-Split", "a\r\nb: c"}}, "x"});
        else
          h.held[k].respond(200, "late");
      }
      if (rng() % 4 == 0) h.run_for(std::chrono::milliseconds(rng() % 3000));
      if (rng() % 6 == 0) h.transport.set_writable(rng() % 2 == 0);  // backpressure
      if (rng() % 64 == 0) h.session->drain();
    }
    h.transport.set_writable(true);
    // By index: answering may resume reading and hold more requests.
    for (std::size_t i = 0; i < h.held.size(); ++i) h.held[i].respond(200, "late");
    h.run_for(std::chrono::seconds(60));  // every timeout has had its chance
    INFO("iteration " << iter << " input: " << ::Catch::Detail::stringify(input));
    const auto rs = h.responses();
    for (const auto& r : rs) CHECK(known.count(r.status) == 1);
    CHECK(h.transport.closes <= 1);
    if (h.closed()) {
      CHECK_FALSE(h.armed());  // every slot the session set is clear again
      CHECK_FALSE(h.transport.in_request());
      CHECK(h.timers.wheel().empty());
    } else {
      CHECK(h.session->in_flight() == 0);
    }
  }
}
