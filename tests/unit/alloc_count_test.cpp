// Its own test binary, because it replaces the global operator new.
// Proves that schedule, cancel, reschedule and expiry allocate nothing, and
// that a WebSocket session copies a single-frame message into one buffer
// allocated once, and that an ExpiringMap entry is one allocation, by
// counting calls to the global operator new in this test binary. Also: what
// an HTTP keep-alive request costs once its session and thread are warm.
#include <heartwheel/http/session.h>
#include <heartwheel/timer/expiring_map.h>
#include <heartwheel/timer/timing_wheel.h>
#include <heartwheel/timer/virtual_clock.h>
#include <heartwheel/ws/session.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "http_memory_transport.h"

namespace {
std::atomic<std::size_t> g_allocations{0};
}

// GCC cannot see that these replace the global pair and warns about free().
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}
// Every form of delete is replaced too, so sanitizers see malloc/free pairs.
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace std::chrono_literals;

TEST_CASE("Wheel operations do not allocate", "[wheel][alloc]") {
  heartwheel::TimingWheel wheel(1ms);
  struct E : heartwheel::TimerEntry {
    E() : TimerEntry([](heartwheel::TimerEntry&) {}) {}
  };
  std::vector<E> entries(10000);
  const std::size_t before = g_allocations.load();
  for (std::size_t i = 0; i < entries.size(); ++i)
    wheel.schedule(entries[i], std::chrono::milliseconds(i % 5000));
  for (std::size_t i = 0; i < entries.size(); i += 3)
    wheel.schedule(entries[i], 10s);  // reschedule
  for (std::size_t i = 0; i < entries.size(); i += 7) wheel.cancel(entries[i]);
  wheel.advance(wheel.now() + 6s);
  wheel.advance(wheel.now() + 10s);
  const std::size_t after = g_allocations.load();
  CHECK(wheel.empty());
  CHECK(after - before == 0);
}

namespace {
// Swallows everything: only the session's own allocations are counted.
struct QuietPeer final : heartwheel::ws::SessionOwner {
  std::size_t messages = 0;
  std::size_t bytes = 0;
  void send(std::string_view head, std::string_view payload) override {
    bytes += head.size() + payload.size();
  }
  void close() override {}
  void on_message(heartwheel::ws::Session& s, heartwheel::ws::MessageType type,
                  std::string& payload) override {
    ++messages;
    (void)s.send(type, payload);  // an echo: header on the stack, payload as a view
  }
};

// A masked client frame of `size` bytes, built by hand.
std::string masked_frame(std::size_t size) {
  std::string out = {'\x82', '\xff'};
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(size >> shift));
  out += std::string("\x01\x02\x03\x04", 4);
  for (std::size_t i = 0; i < size; ++i) out.push_back(static_cast<char>('x' ^ (1 + i % 4)));
  return out;
}
}  // namespace

TEST_CASE(
    "ws: a single-frame message fed in pieces allocates its string and its buffer once each",
    "[ws][alloc]") {
  heartwheel::ws::SessionOptions options;
  QuietPeer peer;
  heartwheel::ws::Session session(peer, options);
  const std::string wire = masked_frame(256 * 1024);
  const std::size_t before = g_allocations.load();
  for (std::size_t pos = 0; pos < wire.size(); pos += 1000)
    session.feed(std::string_view(wire).substr(pos, 1000));
  const std::size_t after = g_allocations.load();
  CHECK(peer.messages == 1);
  CHECK(peer.bytes == 10 + 256 * 1024);
  // The string object (a pointer in the session while no message arrives:
  // docs/memory.md) and its buffer, reserved at the header to the exact size.
  CHECK(after - before == 2);
  CHECK(session.buffered() == 0);
}

TEST_CASE("ws: with a retained buffer, later messages allocate nothing", "[ws][alloc]") {
  heartwheel::ws::SessionOptions options;
  options.retained_buffer_bytes = 64 * 1024;
  QuietPeer peer;
  heartwheel::ws::Session session(peer, options);
  const std::string wire = masked_frame(4096);
  session.feed(wire);  // the first one allocates the buffer
  const std::size_t before = g_allocations.load();
  for (int i = 0; i < 100; ++i) session.feed(wire);
  CHECK(g_allocations.load() - before == 0);
  CHECK(peer.messages == 101);
}

TEST_CASE("ExpiringMap: one allocation per entry, and get, expiry and erase allocate nothing",
          "[expiring_map][alloc]") {
  heartwheel::ManualTimerService timers(1ms);
  heartwheel::ExpiringMap<std::uint64_t, std::uint64_t> map(
      timers, {.expire_after_write = 1s, .expire_after_access = 100ms, .maximum_size = 5000});
  map.reserve(4096);  // the bucket array, once
  const std::size_t before = g_allocations.load();
  for (std::uint64_t k = 0; k < 4000; ++k) map.insert(k, k);
  CHECK(g_allocations.load() - before == 4000);  // the entry: links, wheel entry, key, value
  const std::size_t inserted = g_allocations.load();
  for (int round = 0; round < 5; ++round) {
    for (std::uint64_t k = 0; k < 4000; k += 2) REQUIRE(map.get(k));
    timers.run_for(60ms);  // re-arms on the way, expires the odd keys at 100 ms
  }
  for (std::uint64_t k = 0; k < 4000; k += 4) map.erase(k);
  map.assign(2, 20);  // a replacement reuses its entry
  CHECK(map.size() == 1000);
  CHECK(g_allocations.load() - inserted == 0);
}

namespace {
// A session on a memory transport answering every request with `answer`,
// fed `requests` keep-alive GETs one read each; returns the allocations of
// the last `requests - warm` of them.
template <typename Answer>
std::size_t allocations_per_keepalive_requests(Answer answer, int requests, int warm) {
  using namespace std::chrono_literals;
  heartwheel::ManualTimerService timers{1ms};
  heartwheel::http::SessionOptions options;
  heartwheel::http::SessionStats stats;
  http_test::MemoryTransport transport(timers, heartwheel::net::RefreshMode::lazy);
  const heartwheel::http::Handler handler = [&](const heartwheel::http::Request&,
                                                heartwheel::http::Responder r) { answer(r); };
  heartwheel::http::Session session(options, handler, transport, stats);
  transport.attach(&session);
  session.start();
  const std::string_view get = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
  transport.out.reserve(4096);
  std::size_t before = 0;
  for (int i = 0; i < requests; ++i) {
    if (i == warm) before = g_allocations.load();
    session.on_data(get);
    transport.out.clear();  // keeps its capacity: the transport allocates nothing
  }
  const std::size_t allocations = g_allocations.load() - before;
  CHECK(stats.requests == static_cast<std::uint64_t>(requests));
  CHECK(stats.responses[2] == static_cast<std::uint64_t>(requests));
  CHECK(transport.closes == 0);
  return allocations;
}
}  // namespace

TEST_CASE("http: a warm keep-alive request answered with a shared body allocates nothing",
          "[http][alloc]") {
  // The exchange and its request headers come back from the thread's pool;
  // the head is built in a reused buffer.
  const auto body = std::make_shared<const std::string>("Hello from heartwheel\n");
  const std::size_t n = allocations_per_keepalive_requests(
      [&](heartwheel::http::Responder& r) {
        heartwheel::http::Response resp;
        resp.shared_body = body;
        r.respond(std::move(resp));
      },
      110, 10);
  CHECK(n == 0);
}

TEST_CASE("http: a warm keep-alive request answered with Response::text allocates only the answer",
          "[http][alloc]") {
  // The handler's own Response: its body (22 bytes, past the small-string
  // buffer), its header vector and the Content-Type value (25 bytes).
  const std::size_t n = allocations_per_keepalive_requests(
      [](heartwheel::http::Responder& r) { r.respond(200, "Hello from heartwheel\n"); }, 110, 10);
  CHECK(n == 3 * 100);
}
