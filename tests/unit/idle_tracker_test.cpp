// Idle bookkeeping on a hand-driven clock: one timer entry covers read,
// write, all idle, request deadlines and max age, with lazy or eager refresh.
#include <heartwheel/net/idle_timer.h>
#include <heartwheel/virtual_clock.h>

#include <catch2/catch.hpp>

#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::ManualTimerService;
using heartwheel::TimePoint;
using namespace heartwheel::net;

namespace {

struct Fired {
  IdleEvent event;
  TimePoint at;
};

// An IdleTimer that records events and, unless told otherwise, keeps going.
class Probe final : public IdleTimer {
 public:
  explicit Probe(ManualTimerService& timers) : IdleTimer(timers), timers_(timers) {}
  ~Probe() override = default;
  std::vector<Fired> fired;
  std::vector<Duration> lateness;
  bool stop_on_event = false;

 private:
  void on_timer_fired(Duration late) override { lateness.push_back(late); }
  void on_idle_event(IdleEvent e) override {
    fired.push_back({e, timers_.now()});
    if (stop_on_event) stop_idle();
  }
  ManualTimerService& timers_;
};

TimePoint at(Duration d) { return TimePoint{} + d; }

}  // namespace

TEST_CASE("Read idle fires once the timeout passed with nothing read", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms};
  Probe p(timers);
  p.start_idle(policy);
  timers.run_for(99ms);
  CHECK(p.fired.empty());
  timers.run_for(1ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == IdleKind::read_idle);
  CHECK(p.fired[0].event.first);
  CHECK(p.fired[0].at == at(100ms));
}

TEST_CASE("Lazy refresh: reads only stamp time, and the entry re-arms when it fires", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms, .refresh = RefreshMode::lazy};
  Probe p(timers);
  p.start_idle(policy);
  const auto scheduled_before = timers.wheel().stats().scheduled;
  timers.run_for(60ms);
  p.note_read();  // at 60 ms: no reschedule
  CHECK(timers.wheel().stats().scheduled == scheduled_before);
  CHECK(p.armed_for() == at(100ms));
  timers.run_for(40ms);  // the entry fires at 100 ms, finds the read, re-arms for 160 ms
  CHECK(p.fired.empty());
  CHECK(p.armed_for() == at(160ms));
  timers.run_for(60ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].at == at(160ms));
}

TEST_CASE("Eager refresh moves the entry on every read and fires exactly once", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms, .refresh = RefreshMode::eager};
  Probe p(timers);
  p.start_idle(policy);
  timers.run_for(60ms);
  p.note_read();
  CHECK(p.armed_for() == at(160ms));
  timers.run_for(99ms);
  CHECK(p.fired.empty());
  timers.run_for(1ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].at == at(160ms));
}

TEST_CASE("Idle events repeat with first=false and restart after activity (Netty semantics)",
          "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.write_idle = 50ms};
  Probe p(timers);
  p.start_idle(policy);
  timers.run_for(150ms);
  REQUIRE(p.fired.size() == 3);
  CHECK(p.fired[0].event.first);
  CHECK_FALSE(p.fired[1].event.first);
  CHECK_FALSE(p.fired[2].event.first);
  CHECK(p.fired[2].at == at(150ms));
  p.note_write();
  timers.run_for(50ms);
  REQUIRE(p.fired.size() == 4);
  CHECK(p.fired[3].event.first);
}

TEST_CASE("All idle needs both directions silent, and reads do not reset write idle", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.write_idle = 100ms, .all_idle = 100ms};
  Probe p(timers);
  p.start_idle(policy);
  for (int i = 0; i < 4; ++i) {
    timers.run_for(30ms);
    p.note_read();
  }
  // 120 ms: write idle fired at 100 ms, all idle never (reads kept it alive).
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == IdleKind::write_idle);
  timers.run_for(100ms);
  bool all_seen = false;
  for (auto& f : p.fired) all_seen = all_seen || f.event.kind == IdleKind::all_idle;
  CHECK(all_seen);
}

TEST_CASE("A request deadline fires request_timeout, ending the request prevents it", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 10s};
  Probe p(timers);
  p.start_idle(policy);
  p.begin_request(50ms);  // earlier than the armed 10 s: re-armed at once
  CHECK(p.armed_for() == at(50ms));
  CHECK(p.in_request());
  timers.run_for(50ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == IdleKind::request_timeout);
  CHECK(p.in_request());  // the handler decides; the deadline is spent
  p.end_request();
  p.begin_request(50ms);
  timers.run_for(20ms);
  p.end_request();
  timers.run_for(100ms);
  CHECK(p.fired.size() == 1);
  CHECK_FALSE(p.in_request());
}

TEST_CASE("Max age fires once, however busy the connection", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 40ms, .max_age = 100ms};
  Probe p(timers);
  p.start_idle(policy);
  for (int i = 0; i < 10; ++i) {
    timers.run_for(20ms);
    p.note_read();
  }
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == IdleKind::max_age);
  CHECK(p.fired[0].at == at(100ms));
}

TEST_CASE("Jitter pushes first deadlines later, never earlier", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms};
  std::vector<std::unique_ptr<Probe>> probes;
  for (int i = 0; i < 50; ++i) {
    probes.push_back(std::make_unique<Probe>(timers));
    probes.back()->start_idle(policy, Duration(std::chrono::milliseconds(i)));
  }
  timers.run_for(200ms);
  for (int i = 0; i < 50; ++i) {
    REQUIRE(probes[i]->fired.size() >= 1);
    CHECK(probes[i]->fired[0].at == at(100ms + std::chrono::milliseconds(i)));
  }
}

TEST_CASE("Stopping from inside an event delivers nothing more", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 50ms, .write_idle = 50ms, .all_idle = 50ms};
  Probe p(timers);
  p.stop_on_event = true;
  p.start_idle(policy);
  timers.run_for(500ms);
  CHECK(p.fired.size() == 1);  // read, write and all were due together
  CHECK(timers.wheel().empty());
}

TEST_CASE("A zero policy arms nothing", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  p.start_idle(off);
  CHECK(timers.wheel().empty());
  CHECK(p.armed_for() == IdleTracker::kNever);
  p.note_read();
  p.note_write();
  timers.run_for(1h);
  CHECK(p.fired.empty());
}

TEST_CASE("The tracker stays small", "[idle][memory]") {
  CHECK(sizeof(IdleTracker) <= 64);
  CHECK(sizeof(IdleTimer) <=
        136);  // vtable, entry, service, tracker, armed deadline, baseline timer, flags
}

TEST_CASE("Timer lateness is measured against the unrounded deadline", "[idle]") {
  ManualTimerService timers(10ms);  // deadlines round up to the 10 ms tick
  IdlePolicy policy{.read_idle = 15ms};
  Probe p(timers);
  p.start_idle(policy);
  timers.run_for(15ms);
  CHECK(p.fired.empty());  // never early, and the wheel has not reached 20 ms
  timers.run_for(5ms);
  REQUIRE(p.fired.size() == 1);
  REQUIRE(p.lateness.size() == 1);
  CHECK(p.lateness[0] == 5ms);  // at most one tick late, by design
}
