// The libuv driver: wakes only when something is due, fires on time, bounds
// the work per loop iteration, and lets an empty loop exit.
#include <heartwheel/timer/loop_wheel.h>

#include <catch2/catch.hpp>

#include <memory>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::LoopWheel;
using heartwheel::TimePoint;
using heartwheel::TimerEntry;

namespace {

struct Loop {
  Loop() { REQUIRE(uv_loop_init(&loop) == 0); }
  ~Loop() {
    uv_run(&loop, UV_RUN_DEFAULT);  // let closing handles finish
    CHECK(uv_loop_close(&loop) == 0);  // nothing leaked
  }
  uv_loop_t loop;
};

struct Stamp : TimerEntry {
  Stamp() : TimerEntry(&fire) {}
  static void fire(TimerEntry& e) {
    auto& s = static_cast<Stamp&>(e);
    s.fired_at = TimePoint(std::chrono::nanoseconds(uv_hrtime()));
    ++s.count;
  }
  TimePoint fired_at{};
  int count = 0;
};

TimePoint hr_now() { return TimePoint(std::chrono::nanoseconds(uv_hrtime())); }

}  // namespace

TEST_CASE("LoopWheel fires entries no earlier than their deadline", "[loop_wheel]") {
  Loop l;
  {
    LoopWheel driver(&l.loop, {.tick = 5ms});
    std::vector<Stamp> stamps(4);
    const Duration delays[] = {10ms, 30ms, 75ms, 120ms};
    // Deadlines count from the loop's clock (uv_now, cached per iteration, in
    // whole milliseconds), as with any uv_timer_t: measure from the same clock.
    uv_update_time(&l.loop);
    const TimePoint start = driver.now();
    for (std::size_t i = 0; i < stamps.size(); ++i) driver.schedule(stamps[i], delays[i]);
    uv_run(&l.loop, UV_RUN_DEFAULT);  // returns when the wheel is empty
    for (std::size_t i = 0; i < stamps.size(); ++i) {
      REQUIRE(stamps[i].count == 1);
      // Never early; the upper bound (one tick plus slack) holds on loaded CI.
      CHECK(stamps[i].fired_at - start >= delays[i]);
      CHECK(stamps[i].fired_at - start <= delays[i] + 5ms + 500ms);
    }
    CHECK(driver.wheel().stats().fired == 4);
  }
}

TEST_CASE("An idle loop with a far deadline does not wake up", "[loop_wheel]") {
  Loop l;
  {
    LoopWheel driver(&l.loop, {.tick = 10ms});
    Stamp far;
    driver.schedule(far, 3600s);
    // A separate timer ends the run after 300 ms; count loop iterations meanwhile.
    uv_timer_t stop;
    uv_timer_init(&l.loop, &stop);
    uv_timer_start(&stop, [](uv_timer_t* t) { uv_stop(t->loop); }, 300, 0);
    uv_prepare_t counter;
    int iterations = 0;
    counter.data = &iterations;
    uv_prepare_init(&l.loop, &counter);
    uv_prepare_start(&counter, [](uv_prepare_t* p) { ++*static_cast<int*>(p->data); });
    uv_run(&l.loop, UV_RUN_DEFAULT);
    // An hour-long entry cascades at most a few times; it never ticks per slot.
    CHECK(iterations <= 5);
    CHECK(far.count == 0);
    driver.cancel(far);
    uv_close(reinterpret_cast<uv_handle_t*>(&stop), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&counter), nullptr);
  }
}

TEST_CASE("An empty LoopWheel does not keep the loop alive", "[loop_wheel]") {
  Loop l;
  {
    LoopWheel driver(&l.loop);
    Stamp s;
    driver.schedule(s, 20ms);
    driver.cancel(s);
    const TimePoint start = hr_now();
    uv_run(&l.loop, UV_RUN_DEFAULT);
    CHECK(hr_now() - start < 1s);
    CHECK(s.count == 0);
  }
}

TEST_CASE("Mass expiry is spread over loop iterations", "[loop_wheel]") {
  Loop l;
  {
    LoopWheel driver(&l.loop, {.tick = 1ms, .max_fired_per_iteration = 1000});
    auto stamps = std::make_unique<Stamp[]>(10000);
    for (int i = 0; i < 10000; ++i) driver.schedule(stamps[i], 5ms);
    uv_run(&l.loop, UV_RUN_DEFAULT);
    int fired = 0;
    for (int i = 0; i < 10000; ++i) fired += stamps[i].count;
    CHECK(fired == 10000);
    CHECK(driver.budget_exhausted() >= 9);
  }
}

TEST_CASE("LoopWheel rejects a tick below one millisecond", "[loop_wheel]") {
  Loop l;
  CHECK_THROWS_AS(LoopWheel(&l.loop, {.tick = 100us}), std::invalid_argument);
}

TEST_CASE("A LoopWheel is a TimerService on its loop's clock", "[loop_wheel][clock]") {
  Loop l;
  LoopWheel driver(&l.loop, {.tick = 1ms});
  const heartwheel::TimerService& service = driver;
  CHECK(&service.clock() == &driver.clock());
  CHECK(driver.clock().loop() == &l.loop);
  CHECK(driver.clock().now() >= driver.clock().loop_time());
  CHECK(service.now() >= driver.clock().loop_time());
  // The loop sleeps in its poll: no thread sleeps on its clock.
  heartwheel::LoopClock clock(&l.loop);
  CHECK_THROWS_AS(clock.make_sleeper(), std::logic_error);
}

TEST_CASE("now() is never older than real time after the loop stalled", "[loop][stall]") {
  Loop l;
  LoopWheel driver(&l.loop, {.tick = 1ms});
  uv_timer_t t;
  REQUIRE(uv_timer_init(&l.loop, &t) == 0);
  struct Seen {
    LoopWheel* driver;
    Duration behind_cached{0};  // real - uv_now() inside the stalled callback
    Duration behind_now{0};     // real - driver.now()
  } seen{&driver};
  t.data = &seen;
  uv_timer_start(
      &t,
      [](uv_timer_t* h) {
        auto* s = static_cast<Seen*>(h->data);
        std::this_thread::sleep_for(300ms);  // the stall: uv_now() is not updated
        const TimePoint real = hr_now();
        s->behind_cached = real - heartwheel::from_uv_millis(uv_now(h->loop));
        s->behind_now = real - s->driver->now();
        uv_close(reinterpret_cast<uv_handle_t*>(h), nullptr);
      },
      1, 0);
  uv_run(&l.loop, UV_RUN_DEFAULT);
  CHECK(seen.behind_cached >= 290ms);  // the loop's cached time is stale...
  CHECK(seen.behind_now < 20ms);       // ...the time stamps use is not (coarse clock: <= a jiffy)
}

TEST_CASE("A callback that blocks the loop counts as a stall in the loop statistics",
          "[loop][stall]") {
  Loop l;
  LoopWheel driver(&l.loop, {.tick = 1ms, .stall_threshold = 200ms});
  Stamp keepalive;  // keeps the check phase running
  driver.schedule(keepalive, 400ms);
  uv_idle_t idle;
  REQUIRE(uv_idle_init(&l.loop, &idle) == 0);
  uv_idle_start(&idle, [](uv_idle_t* h) {
    std::this_thread::sleep_for(300ms);
    uv_close(reinterpret_cast<uv_handle_t*>(h), nullptr);
  });
  uv_run(&l.loop, UV_RUN_DEFAULT);
  const auto& s = driver.loop_stats();
  CHECK(s.stalls == 1);
  CHECK(s.stall_max >= 290ms);
  CHECK(s.stall_total == s.stall_max);
  std::uint64_t in_buckets = 0;
  for (auto n : s.lag_buckets) in_buckets += n;
  CHECK(in_buckets == s.iterations);
  CHECK(s.lag_buckets[9] >= 1);  // 300 ms lies in (256, 512] ms
  CHECK(keepalive.count == 1);
}
