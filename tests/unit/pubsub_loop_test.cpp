// A hub on a real libuv loop, one thread: the inbox's wake-up (one per
// batch), the per-wake-up budget, the sweep timer, and closing cleanly.
#include <catch2/catch.hpp>
#include <functional>

#include "pubsub_support.h"

using namespace pubsub_test;

namespace {

// Runs `loop` until `done()` holds or `limit` passes (a ref'd timer checks
// every millisecond and keeps the loop alive: the hub's own handles do not).
bool run_until(uv_loop_t* loop, const std::function<bool()>& done, Duration limit = 10s) {
  struct Watch {
    uv_timer_t timer;
    const std::function<bool()>* done;
    TimePoint deadline;
    bool met = false;
  } w{};
  w.done = &done;
  w.deadline = TimePoint(Clock::now()) + limit;
  uv_timer_init(loop, &w.timer);
  w.timer.data = &w;
  uv_timer_start(
      &w.timer,
      [](uv_timer_t* t) {
        auto* self = static_cast<Watch*>(t->data);
        self->met = (*self->done)();
        if (self->met || TimePoint(Clock::now()) >= self->deadline) uv_stop(t->loop);
      },
      1, 1);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_close(reinterpret_cast<uv_handle_t*>(&w.timer), nullptr);
  uv_run(loop, UV_RUN_NOWAIT);
  return w.met;
}

struct Loop {
  Loop() { uv_loop_init(&loop); }
  ~Loop() {
    uv_run(&loop, UV_RUN_DEFAULT);  // finish closing handles
    CHECK(uv_loop_close(&loop) == 0);
  }
  uv_loop_t loop;
};

}  // namespace

TEST_CASE("A burst of publications wakes the hub's loop once", "[pubsub][loop]") {
  Loop l;
  Bus bus;
  HubOptions o;
  o.loop = &l.loop;
  Hub hub(bus, o);
  Recorder r;
  hub.subscribe(r, "c");
  for (int i = 0; i < 1000; ++i) bus.publish("c", "x");
  REQUIRE(run_until(&l.loop, [&] { return r.offsets.size() == 1000; }));
  CHECK(hub.stats().wakeups == 1);
  CHECK(hub.stats().events == 1000);
}

TEST_CASE("A flood larger than max_events_per_wakeup is spread over loop iterations",
          "[pubsub][loop]") {
  Loop l;
  Bus bus;
  HubOptions o;
  o.loop = &l.loop;
  o.max_events_per_wakeup = 100;
  Hub hub(bus, o);
  Recorder r;
  hub.subscribe(r, "c");
  for (int i = 0; i < 1000; ++i) hub.publish("c", "x");
  REQUIRE(run_until(&l.loop, [&] { return r.offsets.size() == 1000; }));
  CHECK(hub.stats().wakeups == 10);
  CHECK(r.offsets.back() == 1000);
}

TEST_CASE("The hub's sweep timer frees expired history on a loop", "[pubsub][loop][ttl]") {
  Loop l;
  BusOptions bo;
  bo.channel = with_history(10, 20ms);
  bo.sweep_interval = 10ms;
  Bus bus(bo);
  HubOptions o;
  o.loop = &l.loop;
  Hub hub(bus, o);
  hub.publish("one-off", "x");
  CHECK(bus.stats().channels == 1);
  CHECK(run_until(&l.loop, [&] { return bus.stats().channels == 0; }));
}

TEST_CASE("A hub on a loop closes its handles when destroyed, with envelopes pending",
          "[pubsub][loop]") {
  Loop l;
  Bus bus;
  Recorder r;
  {
    HubOptions o;
    o.loop = &l.loop;
    Hub hub(bus, o);
    hub.subscribe(r, "c");
    hub.publish("c", "pending");
  }
  CHECK(r.data.empty());
  CHECK(bus.stats().hubs == 0);
}  // ~Loop: uv_loop_close succeeds only if every handle was closed
