// The README's examples ("What the library offers"), compiled from README.md
// itself (tests/readme/extract_snippets.py writes them into
// readme_snippets.cpp at build time), so they cannot drift from the API.
#include <heartwheel/redis/client.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/timer/virtual_clock.h>

#include <catch2/catch.hpp>

// Defined in the generated readme_snippets.cpp.
void readme_snippet_expiring_map(heartwheel::TimerService& wheel);
void readme_snippet_redis_lock(heartwheel::LoopWheel& wheel, heartwheel::redis::Client& client);

TEST_CASE("The README's ExpiringMap example compiles and runs on a virtual clock", "[readme]") {
  heartwheel::ManualTimerService timers;
  readme_snippet_expiring_map(timers);
  CHECK(timers.wheel().empty());  // the map was the example's: gone with its entries
}

TEST_CASE("The README's redis::Lock example compiles", "[readme]") {
  // It needs a Redis to run; its behaviour is tests/integration/redis_lock_test.cpp's.
  void (*example)(heartwheel::LoopWheel&, heartwheel::redis::Client&) = &readme_snippet_redis_lock;
  CHECK(example != nullptr);
}
