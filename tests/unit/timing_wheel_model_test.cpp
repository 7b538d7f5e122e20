// Seeded randomized comparison of the wheel against a plain reference model
// (std::map of deadlines). On failure Catch prints the seed and the step.
#include <heartwheel/timer/timing_wheel.h>

#include <catch2/catch.hpp>

#include "model_require.h"

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::SameTickOrder;
using heartwheel::TimePoint;
using heartwheel::TimerEntry;
using heartwheel::TimingWheel;


namespace {

template <std::size_t Pad>
struct Model;

// Pad bytes after the fields: with Pad near a page, consecutive items sit on
// different 4 KiB pages, so they spread over a slot's ways (the way is a hash
// of the entry's page); with Pad = 0 a few items share one page and one way.
template <std::size_t Pad>
struct Item : TimerEntry {
  Item() : TimerEntry(&fire) {}
  static void fire(TimerEntry& e) {
    auto& it = static_cast<Item&>(e);
    it.model->on_fire(it);
  }
  Model<Pad>* model = nullptr;
  std::size_t id = 0;
  std::array<char, Pad> pad{};
};

template <std::size_t Pad>
struct Model {
  using Item = ::Item<Pad>;
  explicit Model(std::uint64_t seed, std::size_t n, Duration tick, SameTickOrder order)
      : rng(seed), wheel(tick, TimePoint{}, order), items(n), tick_ns(tick.count()) {
    for (std::size_t i = 0; i < n; ++i) {
      items[i].model = this;
      items[i].id = i;
    }
  }
  ~Model() {
    for (auto& it : items) wheel.cancel(it);
  }

  std::uint64_t ceil_ticks(TimePoint t) const {
    const auto ns = t.time_since_epoch().count();
    return ns <= 0 ? 0 : static_cast<std::uint64_t>((ns + tick_ns - 1) / tick_ns);
  }
  std::uint64_t floor_ticks(TimePoint t) const {
    return static_cast<std::uint64_t>(t.time_since_epoch().count() / tick_ns);
  }

  Duration random_delay() {
    // Mostly short and mid-range delays, some far ones that cross levels.
    switch (rng() % 8) {
      case 0: return Duration(rng() % (tick_ns * 2));
      case 1: case 2: case 3: return Duration(rng() % (tick_ns * 64));
      case 4: case 5: return Duration(rng() % (tick_ns * 5000));
      case 6: return Duration(rng() % (tick_ns * 300000));
      default: return Duration(rng() % (tick_ns * 50'000'000));
    }
  }

  void schedule(std::size_t id, Duration delay) { schedule_at(id, wheel.now() + delay); }

  void schedule_at(std::size_t id, TimePoint deadline) {
    last_deadline = deadline;
    wheel.schedule_at(items[id], deadline);
    std::uint64_t when = ceil_ticks(deadline);
    when = std::max(when, elapsed);
    disarm(id);
    armed[id] = when;
    by_when.insert({when, id});
    deadlines[id] = deadline;
    armed_at[id] = wheel.now();
  }

  bool disarm(std::size_t id) {
    auto it = armed.find(id);
    if (it == armed.end()) return false;
    by_when.erase({it->second, id});
    armed.erase(it);
    return true;
  }

  void on_fire(Item& it) {
    ++fired_count;
    MODEL_REQUIRE(armed.count(it.id) == 1);
    MODEL_REQUIRE(expected.count(it.id) == 1);  // due before this advance began
    const std::uint64_t when = armed[it.id];
    MODEL_REQUIRE(when >= last_when);            // fired in deadline order
    last_when = when;
    MODEL_REQUIRE(wheel.now() >= deadlines[it.id]);  // never early
    // Late against the deadline, or against the time of scheduling when the
    // deadline was already past then (a repeated old deadline).
    if (measuring)
      max_late = std::max(max_late, wheel.now() - std::max(deadlines[it.id], armed_at[it.id]));
    expected.erase(it.id);
    disarm(it.id);
    // A quarter of the callbacks re-arm themselves, some another entry too.
    const auto r = rng() % 8;
    if (r < 2) schedule(it.id, random_delay());
    if (r == 2) {
      const std::size_t other = rng() % items.size();
      if (armed.count(other) && !expected.count(other)) {
        wheel.cancel(items[other]);
        disarm(other);
      }
    }
  }

  void advance(Duration step) {
    const TimePoint now = wheel.now() + step;
    const std::uint64_t target = floor_ticks(now);
    expected.clear();
    for (auto it = by_when.begin(); it != by_when.end() && it->first <= target; ++it)
      expected.insert(it->second);
    last_when = 0;
    wheel.advance(now);
    MODEL_REQUIRE(expected.empty());  // everything due ran
    elapsed = std::max(elapsed, target);
  }

  std::mt19937_64 rng;
  TimingWheel wheel;
  std::vector<Item> items;
  std::int64_t tick_ns;
  std::map<std::size_t, std::uint64_t> armed;  // the reference: id -> deadline tick
  std::set<std::pair<std::uint64_t, std::size_t>> by_when;  // the same, ordered
  std::map<std::size_t, TimePoint> deadlines;
  std::map<std::size_t, TimePoint> armed_at;  // wheel.now() when scheduled
  TimePoint last_deadline{};                  // the deadline of the last schedule
  std::set<std::size_t> expected;
  std::uint64_t elapsed = 0, last_when = 0, fired_count = 0;
  Duration max_late{0};
  bool measuring = true;  // lateness is bounded only while steps are <= 1 tick
};

// repeat: how many schedules in 8 reuse the last deadline given (the wheel
// keeps its last deadline's slot: runs of equal deadlines, also across
// advances that make it the past or move it to another level).
template <std::size_t Pad = 0>
void run_model(std::uint64_t seed, std::size_t entries, std::size_t ops, Duration tick,
               Duration max_step, SameTickOrder order = SameTickOrder::unspecified,
               unsigned repeat = 0) {
  INFO("seed " << seed << " entries " << entries << " tick " << tick.count() << "ns");
  Model<Pad> m(seed, entries, tick, order);
  for (std::size_t op = 0; op < ops; ++op) {
    g_model_op = op;
    const std::size_t id = m.rng() % entries;
    switch (m.rng() % 10) {
      case 0: case 1: case 2: case 3:
        if (m.rng() % 8 < repeat)
          m.schedule_at(id, m.last_deadline);
        else
          m.schedule(id, m.random_delay());
        break;
      case 4: case 5: {
        const bool was = m.disarm(id);
        MODEL_REQUIRE(m.wheel.cancel(m.items[id]) == was);
        break;
      }
      default:
        m.advance(Duration(m.rng() % (max_step.count() + 1)));
    }
    MODEL_REQUIRE(m.wheel.size() == m.armed.size());
    if (op % 4096 == 0) {
      try {
        m.wheel.validate();
      } catch (const std::logic_error& e) {
        FAIL(e.what() << "\n" << m.wheel.dump());
      }
    }
  }
  m.wheel.validate();
  // Drain: everything still armed must fire, in order, never early.
  m.measuring = false;
  while (!m.armed.empty()) m.advance(Duration(m.rng() % (max_step.count() + 1)) + tick);
  CHECK(m.fired_count > ops / 20);
  if (max_step <= tick) CHECK(m.max_late < tick * 2);  // one tick, plus the step's rounding
}

}  // namespace

TEST_CASE("The wheel agrees with a reference model over millions of operations", "[wheel][model]") {
  // Small steps: every fire is checked against the one-tick lateness bound.
  run_model(0x5eed0001, 2000, 1'500'000, 1ms, 1ms);
  // Large, ragged steps and a sub-millisecond tick: cascades across levels.
  run_model(0x5eed0002, 500, 1'000'000, 250us, 900ms);
}

TEST_CASE("The model holds with a few entries and huge time jumps", "[wheel][model]") {
  run_model(0x5eed0003, 16, 300'000, 1ms, 100'000'000ms);
}

TEST_CASE("The model holds with every entry on its own page, so slots use all their ways",
          "[wheel][model][ways]") {
  run_model<4096>(0x5eed0004, 300, 500'000, 1ms, 1ms);
  run_model<4096>(0x5eed0005, 16, 200'000, 1ms, 100'000'000ms);
}

TEST_CASE("The model holds for a wheel in fifo order", "[wheel][model]") {
  run_model<4096>(0x5eed0006, 300, 500'000, 1ms, 1ms, SameTickOrder::fifo);
  run_model(0x5eed0007, 500, 300'000, 250us, 900ms, SameTickOrder::fifo);
}

TEST_CASE("The model holds when most schedules repeat the last deadline", "[wheel][model]") {
  // As in a loop: many entries armed from one cached `now`, then time moves
  // on, so the repeated deadline lands in lower levels and then in the past.
  run_model(0x5eed0008, 2000, 1'000'000, 1ms, 1ms, SameTickOrder::unspecified, 6);
  run_model(0x5eed0009, 500, 500'000, 250us, 900ms, SameTickOrder::unspecified, 6);
  run_model<4096>(0x5eed000a, 300, 300'000, 1ms, 1ms, SameTickOrder::fifo, 6);
  run_model(0x5eed000b, 16, 200'000, 1ms, 100'000'000ms, SameTickOrder::unspecified, 6);
}
