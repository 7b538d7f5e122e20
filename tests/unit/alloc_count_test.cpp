// Its own test binary, because it replaces the global operator new.
// Proves that schedule, cancel, reschedule and expiry allocate nothing, by
// counting calls to the global operator new in this test binary.
#include <heartwheel/timing_wheel.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

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
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept { return operator new(n, tag); }
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
  for (std::size_t i = 0; i < entries.size(); ++i) wheel.schedule(entries[i], std::chrono::milliseconds(i % 5000));
  for (std::size_t i = 0; i < entries.size(); i += 3) wheel.schedule(entries[i], 10s);  // reschedule
  for (std::size_t i = 0; i < entries.size(); i += 7) wheel.cancel(entries[i]);
  wheel.advance(wheel.now() + 6s);
  wheel.advance(wheel.now() + 10s);
  const std::size_t after = g_allocations.load();
  CHECK(wheel.empty());
  CHECK(after - before == 0);
}
