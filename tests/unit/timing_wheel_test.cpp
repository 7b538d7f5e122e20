// Behaviour of the single-threaded wheel core, on a virtual clock.
#include <heartwheel/timer/timing_wheel.h>
#include <heartwheel/timer/virtual_clock.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::SameTickOrder;
using heartwheel::TimePoint;
using heartwheel::TimerEntry;
using heartwheel::TimingWheel;
using heartwheel::VirtualClock;

namespace {

// A test entry that records when it fired and can run an action.
struct Probe : TimerEntry {
  Probe() : TimerEntry(&fire) {}
  ~Probe() {
    if (wheel) wheel->cancel(*this);
  }
  static void fire(TimerEntry& e) {
    auto& p = static_cast<Probe&>(e);
    p.fired_at.push_back(p.wheel->now());
    if (p.action) p.action(p);
  }
  TimingWheel* wheel = nullptr;
  std::vector<TimePoint> fired_at;
  std::function<void(Probe&)> action;
};

template <class P>
void arm_all(TimingWheel& wheel, std::vector<P>& probes, Duration delay) {
  for (auto& p : probes) {
    p.wheel = &wheel;
    wheel.schedule(p, delay);
  }
}

}  // namespace

TEST_CASE("The level table in the header matches the constants", "[wheel]") {
  // Recomputes the header's table so the comment cannot drift from the code.
  STATIC_REQUIRE(TimingWheel::kSlots == 64);
  STATIC_REQUIRE(TimingWheel::kLevels == 8);
  struct Row { unsigned level; std::uint64_t slot_width, range; };
  const Row table[] = {{0, 1, 64},          {1, 64, 1ull << 12},        {2, 1ull << 12, 1ull << 18},
                       {3, 1ull << 18, 1ull << 24}, {4, 1ull << 24, 1ull << 30}, {5, 1ull << 30, 1ull << 36},
                       {6, 1ull << 36, 1ull << 42}, {7, 1ull << 42, 1ull << 48}};
  for (const Row& r : table) {
    const std::uint64_t width = std::uint64_t{1} << (r.level * TimingWheel::kSlotBits);
    CHECK(width == r.slot_width);
    CHECK(width * TimingWheel::kSlots == r.range);
  }
  CHECK(TimingWheel::kMaxTicks == table[7].range);
  // "at tick = 1 ms" column: level 1 range is 4.1 s, level 3 is 4.7 h.
  CHECK(std::chrono::duration<double>(1ms * (1ull << 12)).count() == Approx(4.1).margin(0.01));
  CHECK(std::chrono::duration<double, std::ratio<3600>>(1ms * (1ull << 24)).count() ==
        Approx(4.66).margin(0.01));
}

TEST_CASE("An entry never fires early and at most one tick late", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(10ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  for (Duration delay : {Duration(1ms), Duration(10ms), Duration(15ms), Duration(640ms),
                         Duration(5s), Duration(3600s)}) {
    const TimePoint deadline = clock.now() + delay;
    wheel.schedule_at(p, deadline);
    clock.run_for(wheel, delay - 1ms);
    REQUIRE(p.fired_at.empty());
    clock.run_for(wheel, 1ms + 10ms);
    REQUIRE(p.fired_at.size() == 1);
    CHECK(p.fired_at[0] >= deadline);
    CHECK(p.fired_at[0] <= deadline + 10ms);
    p.fired_at.clear();
    wheel.validate();
  }
}

TEST_CASE("A long timeout is moved at most once per level, not every revolution", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  wheel.schedule(p, 3600s);
  // Ticking in small steps visits level 0 many thousand times over the hour.
  for (int i = 0; i < 3600; ++i) clock.run_for(wheel, 1s);
  REQUIRE(p.fired_at.size() == 1);
  CHECK(wheel.stats().cascaded <= TimingWheel::kLevels);
}

TEST_CASE("next_deadline skips empty slots and is empty for an empty wheel", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  CHECK_FALSE(wheel.next_deadline());
  Probe p;
  p.wheel = &wheel;
  wheel.schedule(p, 30ms);
  REQUIRE(wheel.next_deadline());
  CHECK(*wheel.next_deadline() == clock.now() + 30ms);
  // A far deadline reports the cascade point of its level, never later than
  // the deadline itself; driving to it costs a handful of wake-ups.
  wheel.schedule(p, 100s);
  int wakeups = 0;
  while (p.fired_at.empty()) {
    auto next = wheel.next_deadline();
    REQUIRE(next);
    REQUIRE(*next <= clock.now() + 100s + 1ms);
    clock.advance(*next - clock.now());
    wheel.advance(clock.now());
    ++wakeups;
  }
  CHECK(wakeups <= 4);
  CHECK(p.fired_at[0] == TimePoint{} + 100s);
  CHECK_FALSE(wheel.next_deadline());
}

TEST_CASE("cancel returns whether the entry was armed, and a cancelled entry never fires", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  CHECK_FALSE(wheel.cancel(p));
  wheel.schedule(p, 5ms);
  CHECK(wheel.size() == 1);
  CHECK(wheel.cancel(p));
  CHECK_FALSE(wheel.cancel(p));
  CHECK(wheel.size() == 0);
  clock.run_for(wheel, 1s);
  CHECK(p.fired_at.empty());
  wheel.validate();
}

TEST_CASE("A slot spread over its ways stays due until its last entry is cancelled",
          "[wheel][ways]") {
  // One entry per 4 KiB page: an entry's way is a hash of its page, so 64
  // pages fill all of a slot's ways.
  struct alignas(4096) PageProbe : Probe {};
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  std::vector<PageProbe> probes(64);
  arm_all(wheel, probes, 5ms);
  Probe later;
  later.wheel = &wheel;
  wheel.schedule(later, 40ms);
  wheel.validate();
  CHECK(wheel.dump().find("[5]x64 (") != std::string::npos);

  std::vector<std::size_t> order(probes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = (i * 37) % order.size();  // scrambled
  for (std::size_t k = 0; k + 1 < order.size(); ++k) {
    CHECK(wheel.cancel(probes[order[k]]));
    CHECK(wheel.next_deadline() == TimePoint{} + 5ms);  // other ways still hold entries
  }
  wheel.validate();
  CHECK(wheel.cancel(probes[order.back()]));
  CHECK(wheel.next_deadline() == TimePoint{} + 40ms);  // the slot's last way emptied
  wheel.validate();

  // A full slot fires every entry of every way once, in one advance.
  for (auto& p : probes) wheel.schedule(p, 10ms);
  CHECK(wheel.advance(clock.now() + 10ms) == probes.size());
  for (const auto& p : probes) CHECK(p.fired_at == std::vector<TimePoint>{TimePoint{} + 10ms});
  CHECK(later.fired_at.empty());
  wheel.validate();
}

TEST_CASE("Rescheduling moves the deadline both ways", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  wheel.schedule(p, 50ms);
  wheel.schedule(p, 200ms);  // pushed back
  clock.run_for(wheel, 100ms);
  CHECK(p.fired_at.empty());
  wheel.schedule(p, 5ms);    // pulled in
  clock.run_for(wheel, 10ms);
  REQUIRE(p.fired_at.size() == 1);
  CHECK(p.fired_at[0] == TimePoint{} + 105ms);
  CHECK(wheel.size() == 0);
}

TEST_CASE("Postponing a deadline only stores it, and the entry still fires on time", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  wheel.schedule(p, 30s);  // level 2: 4.096 s slots
  const auto relinked = wheel.stats().relinked;
  for (int i = 0; i < 100; ++i) {
    clock.advance(1ms);
    wheel.advance(clock.now());
    wheel.schedule(p, 30s);
  }
  CHECK(wheel.stats().relinked == relinked);  // no unlink or relink on refresh
  wheel.validate();
  clock.run_for(wheel, 30s - 1ms);
  CHECK(p.fired_at.empty());
  clock.run_for(wheel, 2ms);
  REQUIRE(p.fired_at.size() == 1);
  CHECK(p.fired_at[0] == TimePoint{} + 100ms + 30s);
}

TEST_CASE("A callback may re-schedule its own entry", "[wheel][reentrancy]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  p.action = [&](Probe& self) {
    if (self.fired_at.size() < 5) wheel.schedule(self, 100ms);
  };
  wheel.schedule(p, 100ms);
  clock.run_for(wheel, 1s);
  REQUIRE(p.fired_at.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) CHECK(p.fired_at[i] == TimePoint{} + 100ms * (i + 1));
}

TEST_CASE("A zero-delay self re-arm runs once per advance and cannot spin", "[wheel][reentrancy]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  p.action = [&](Probe& self) { wheel.schedule(self, 0ms); };
  wheel.schedule(p, 0ms);
  CHECK(wheel.advance(clock.now()) == 1);
  CHECK(wheel.advance(clock.now()) == 1);
  CHECK(p.fired_at.size() == 2);
  p.action = nullptr;
  wheel.cancel(p);
}

// In the default order, which of two entries due on the same tick runs first
// depends on their addresses (their ways); in fifo order it is the first
// scheduled. Either way the one that runs first can cancel or move the other.
TEST_CASE("A callback may cancel another entry due in the same tick", "[wheel][reentrancy]") {
  const auto order = GENERATE(SameTickOrder::unspecified, SameTickOrder::fifo);
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now(), order);
  Probe a, b;
  a.wheel = b.wheel = &wheel;
  a.action = [&](Probe&) { CHECK(wheel.cancel(b)); };
  b.action = [&](Probe&) { CHECK(wheel.cancel(a)); };
  wheel.schedule(a, 10ms);
  wheel.schedule(b, 10ms);
  clock.run_for(wheel, 20ms);
  CHECK(a.fired_at.size() + b.fired_at.size() == 1);  // the first to run cancelled the other
  if (order == SameTickOrder::fifo) CHECK(a.fired_at.size() == 1);
  CHECK(wheel.size() == 0);
  wheel.validate();
}

TEST_CASE("A callback may reschedule another entry due in the same tick", "[wheel][reentrancy]") {
  const auto order = GENERATE(SameTickOrder::unspecified, SameTickOrder::fifo);
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now(), order);
  Probe a, b;
  a.wheel = b.wheel = &wheel;
  a.action = [&](Probe&) {
    if (b.armed()) wheel.schedule(b, 50ms);
  };
  b.action = [&](Probe&) {
    if (a.armed()) wheel.schedule(a, 50ms);
  };
  wheel.schedule(a, 10ms);
  wheel.schedule(b, 10ms);
  clock.run_for(wheel, 20ms);
  REQUIRE(a.fired_at.size() + b.fired_at.size() == 1);
  Probe& moved = a.fired_at.empty() ? a : b;
  if (order == SameTickOrder::fifo) CHECK(&moved == &b);
  clock.run_for(wheel, 50ms);
  REQUIRE(moved.fired_at.size() == 1);
  CHECK(moved.fired_at[0] == TimePoint{} + 60ms);
}

TEST_CASE("In fifo order, entries due on the same tick run in the order they were scheduled",
          "[wheel][ways]") {
  struct alignas(4096) PageProbe : Probe {};  // one per page: different ways by default
  std::vector<std::size_t> ran;
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now(), SameTickOrder::fifo);
  CHECK(wheel.same_tick_order() == SameTickOrder::fifo);
  std::vector<PageProbe> probes(32);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    probes[i].wheel = &wheel;
    probes[i].action = [&ran, i](Probe&) { ran.push_back(i); };
  }
  std::vector<std::size_t> expected;
  // The first half waits at level 1 and cascades into the tick's level-0
  // slot at 64 ms; the second half is scheduled after that, straight into it.
  for (std::size_t k = 0; k < 16; ++k) expected.push_back((k * 7) % 16);
  for (std::size_t k = 0; k < 16; ++k) expected.push_back(16 + (k * 5) % 16);
  for (std::size_t k = 0; k < 16; ++k) wheel.schedule(probes[expected[k]], 100ms);
  clock.run_for(wheel, 70ms);
  CHECK(wheel.stats().cascaded == 16);
  for (std::size_t k = 16; k < 32; ++k) wheel.schedule(probes[expected[k]], 30ms);
  wheel.validate();
  clock.run_for(wheel, 30ms);
  CHECK(ran == expected);
}

TEST_CASE("A callback may destroy the owner of its own entry", "[wheel][reentrancy]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  struct Owned : TimerEntry {
    explicit Owned(int* counter) : TimerEntry(&fire), count(counter) {}
    static void fire(TimerEntry& e) {
      auto* self = static_cast<Owned*>(&e);
      ++*self->count;
      delete self;
    }
    int* count;
  };
  int count = 0;
  for (int i = 0; i < 100; ++i) wheel.schedule(*new Owned(&count), 5ms);
  clock.run_for(wheel, 10ms);
  CHECK(count == 100);
  CHECK(wheel.empty());
}

TEST_CASE("An entry scheduled from a callback for the past fires at the next advance", "[wheel][reentrancy]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe a, b;
  a.wheel = b.wheel = &wheel;
  a.action = [&](Probe&) { wheel.schedule_at(b, TimePoint{}); };
  wheel.schedule(a, 3ms);
  clock.advance(3ms);
  CHECK(wheel.advance(clock.now()) == 1);
  CHECK(b.fired_at.empty());
  CHECK(wheel.next_deadline() <= clock.now());
  CHECK(wheel.advance(clock.now()) == 1);
  CHECK(b.fired_at.size() == 1);
}

TEST_CASE("advance runs at most max_fired callbacks and keeps the rest ready", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  std::vector<Probe> probes(1000);
  arm_all(wheel, probes, 10ms);
  clock.advance(10ms);
  CHECK(wheel.advance(clock.now(), 300) == 300);
  CHECK(wheel.ready() == 700);
  CHECK(*wheel.next_deadline() <= clock.now());
  // A ready entry can still be cancelled.
  CHECK(wheel.cancel(probes.back()));
  CHECK(wheel.advance(clock.now(), 1000) == 699);
  CHECK(wheel.empty());
  wheel.validate();
}

TEST_CASE("Lateness is measured against each deadline", "[wheel]") {
  VirtualClock clock;
  TimingWheel wheel(1ms, clock.now());
  Probe p;
  p.wheel = &wheel;
  wheel.schedule(p, 10ms);
  clock.advance(25ms);  // the driver woke up 15 ms late
  wheel.advance(clock.now());
  CHECK(wheel.stats().fired == 1);
  CHECK(wheel.stats().max_lateness == 15ms);
}

TEST_CASE("Delays past max_delay are clamped, and a bad tick is rejected", "[wheel]") {
  CHECK_THROWS_AS(TimingWheel(0ms), std::invalid_argument);
  TimingWheel wheel(1ms);
  Probe p;
  p.wheel = &wheel;
  wheel.schedule(p, Duration::max());
  CHECK(wheel.deadline_of(p) == wheel.now() + wheel.max_delay());
  wheel.validate();
  wheel.cancel(p);
}

TEST_CASE("Deadlines round up to a whole tick exactly, for any tick and any distance", "[wheel]") {
  // Where an off-by-one in the tick conversion would show: on, just before
  // and just after tick multiples, near and far, for ticks that do not
  // divide a second.
  const Duration ticks[] = {1ns, 3ns, 7ns, 1us, 999'999ns, 1ms, 1'000'003ns, 1s, 7919ms};
  for (const Duration tick : ticks) {
    TimingWheel wheel(tick);
    Probe p;
    p.wheel = &wheel;
    const auto max = std::min<std::int64_t>(wheel.max_delay().count(), std::int64_t{1} << 61);
    for (std::int64_t base :
         {std::int64_t{1}, std::int64_t{64}, std::int64_t{4097}, std::int64_t{1} << 20,
          std::int64_t{1} << 35, max / tick.count() - 2}) {
      if (base > max / tick.count()) continue;  // past the wheel's range (and int64's)
      for (std::int64_t off : {-1, 0, 1}) {
        const std::int64_t ns = base * tick.count() + off;
        if (ns <= 0 || ns > max) continue;
        wheel.schedule_at(p, TimePoint(Duration(ns)));
        const std::int64_t want = (ns + tick.count() - 1) / tick.count() * tick.count();
        INFO("tick " << tick.count() << " ns, deadline " << ns << " ns");
        CHECK(wheel.deadline_of(p).time_since_epoch().count() == want);
      }
    }
    wheel.cancel(p);
  }
}

TEST_CASE("The wheel releases armed entries when it is destroyed", "[wheel]") {
  Probe p;
  {
    TimingWheel wheel(1ms);
    wheel.schedule(p, 1s);
    CHECK(p.armed());
  }
  CHECK_FALSE(p.armed());
}

TEST_CASE("ManualTimerService schedules relative to its own clock", "[wheel][clock]") {
  heartwheel::ManualTimerService timers(1ms);
  Probe p;
  p.wheel = &timers.wheel();
  timers.run_for(5s);  // the wheel learns the time only when advanced
  timers.schedule(p, 100ms);
  CHECK(timers.wheel().deadline_of(p) == TimePoint{} + 5s + 100ms);
  timers.run_for(99ms);
  CHECK(p.fired_at.empty());
  timers.run_for(1ms);
  REQUIRE(p.fired_at.size() == 1);
  CHECK(p.fired_at[0] == TimePoint{} + 5s + 100ms);
}

TEST_CASE("ManualTimerService is a TimerService on a VirtualClock", "[wheel][clock]") {
  heartwheel::ManualTimerService timers(1ms, TimePoint{} + 1s);
  const heartwheel::TimerService& service = timers;
  CHECK(&service.clock() == &timers.clock());  // one clock: the service's time is the clock's
  CHECK(service.now() == TimePoint{} + 1s);
  Probe p;
  p.wheel = &timers.wheel();
  timers.schedule(p, 10ms);
  // Moving the clock moves the time, not the wheel: what is due runs at the
  // next run_for(), at the clock's time.
  timers.clock().advance(50ms);
  CHECK(service.now() == TimePoint{} + 1050ms);
  CHECK(p.fired_at.empty());
  timers.run_for(0ms);
  REQUIRE(p.fired_at.size() == 1);
  CHECK(p.fired_at[0] == TimePoint{} + 1050ms);
}

TEST_CASE("A TimerService delay of Duration::max() saturates instead of wrapping into the past",
          "[wheel][never]") {
  heartwheel::ManualTimerService timers(std::chrono::milliseconds(1),
                                        heartwheel::TimePoint{} + std::chrono::hours(1));
  struct Count : heartwheel::TimerEntry {
    Count() : TimerEntry([](heartwheel::TimerEntry& e) { ++static_cast<Count&>(e).fired; }) {}
    int fired = 0;
  } e;
  heartwheel::TimerService& service = timers;
  service.schedule(e, heartwheel::Duration::max());
  timers.run_for(std::chrono::hours(24 * 365));
  CHECK(e.fired == 0);  // wrapped, it would have been due at once
  timers.cancel(e);
}
