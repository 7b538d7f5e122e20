// ExpiringMap on hand-advanced time (ManualTimerService): expiry on the
// tick and never before, the lazy access refresh, per-entry ttl, the
// removal causes, least-recently-used eviction, re-entrant listeners,
// iteration; and on a real loop (LoopWheel).
#include <heartwheel/timer/expiring_map.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/timer/virtual_clock.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::ExpiringMap;
using heartwheel::ManualTimerService;
using heartwheel::RemovalCause;
using heartwheel::TimePoint;

namespace {

TimePoint at(Duration d) { return TimePoint(d); }

// What the removal listener saw: key, value, cause and when.
struct Removal {
  std::string key;
  int value;
  RemovalCause cause;
  TimePoint when;
  bool operator==(const Removal&) const = default;
};

struct Recorder {
  ManualTimerService* timers;
  std::vector<Removal> seen;
  ExpiringMap<std::string, int>::RemovalListener listener() {
    return [this](const std::string& k, int& v, RemovalCause c) {
      seen.push_back({k, v, c, timers->now()});
    };
  }
};

using Map = ExpiringMap<std::string, int>;

}  // namespace

TEST_CASE("An entry expires on the tick of its write deadline and not before",
          "[expiring_map]") {
  ManualTimerService timers(1ms);
  Recorder r{&timers, {}};
  Map map(timers, {.expire_after_write = 100ms, .on_removal = r.listener()});
  timers.run_for(500us);
  CHECK(map.insert("a", 1));  // deadline 100.5 ms, its tick 101 ms
  CHECK(map.expires_at("a") == at(100500us));
  timers.run_for(100ms - 1ns);
  REQUIRE(map.get("a") != nullptr);
  CHECK(*map.get("a") == 1);
  CHECK(r.seen.empty());
  timers.run_for(1ns);  // the deadline: no longer live, its removal is due on the tick
  CHECK(map.get("a") == nullptr);
  CHECK_FALSE(map.contains("a"));
  CHECK(map.size() == 1);
  CHECK(r.seen.empty());
  timers.run_for(1ms);
  CHECK(map.size() == 0);
  REQUIRE(r.seen.size() == 1);
  CHECK(r.seen[0] == Removal{"a", 1, RemovalCause::expired, at(101ms)});
  CHECK(map.stats().removed(RemovalCause::expired) == 1);
}

TEST_CASE("A get pushes the access deadline back with a store, not a wheel operation",
          "[expiring_map]") {
  ManualTimerService timers(1ms);
  Recorder r{&timers, {}};
  Map map(timers, {.expire_after_access = 50ms, .on_removal = r.listener()});
  map.insert("s", 7);
  const auto scheduled = timers.wheel().stats().scheduled;
  REQUIRE(map.get("s") != nullptr);
  CHECK(timers.wheel().stats().scheduled == scheduled);  // the get itself: a store
  for (int i = 0; i < 100; ++i) {
    timers.run_for(4ms);
    REQUIRE(map.get("s") != nullptr);
  }
  // 101 uses in 400 ms, and the wheel saw a schedule only when the entry
  // fired at an old deadline and found a later one: once per 50 ms at most.
  CHECK(timers.wheel().stats().scheduled - scheduled <= 400 / 50);
  CHECK(map.expires_at("s") == at(400ms + 50ms));
  timers.run_for(50ms - 1ns);
  CHECK(r.seen.empty());
  timers.run_for(1ns);
  REQUIRE(r.seen.size() == 1);
  CHECK(r.seen[0] == Removal{"s", 7, RemovalCause::expired, at(450ms)});
  CHECK(map.stats().hits == 101);
}

TEST_CASE("Peek, contains and iteration do not use an entry", "[expiring_map]") {
  ManualTimerService timers(1ms);
  Recorder r{&timers, {}};
  Map map(timers, {.expire_after_access = 50ms, .maximum_size = 2, .on_removal = r.listener()});
  map.insert("old", 1);
  map.insert("new", 2);
  timers.run_for(40ms);
  REQUIRE(map.peek("old") != nullptr);
  CHECK(map.contains("old"));
  for (auto& [k, v] : map) v += 10;  // writes through iteration, no use
  map.insert("third", 3);  // evicts the least recently used: "old", peeked but not used
  REQUIRE(r.seen.size() == 1);
  CHECK(r.seen[0] == Removal{"old", 11, RemovalCause::size, at(40ms)});
  timers.run_for(10ms);  // "new" expires at 50 ms: the peek did not push it back
  REQUIRE(r.seen.size() == 2);
  CHECK(r.seen[1] == Removal{"new", 12, RemovalCause::expired, at(50ms)});
  CHECK(map.stats().hits == 0);
}

TEST_CASE("A per-entry ttl overrides expire_after_write, and 0 never expires",
          "[expiring_map]") {
  ManualTimerService timers(1ms);
  Recorder r{&timers, {}};
  Map map(timers, {.expire_after_write = 1s, .on_removal = r.listener()});
  map.insert("default", 1);
  map.insert("short", 2, 10ms);
  map.insert("forever", 3, 0s);
  CHECK(map.expires_at("forever") == heartwheel::kNever);
  timers.run_for(10ms);
  REQUIRE(r.seen.size() == 1);
  CHECK(r.seen[0].key == "short");
  timers.run_for(990ms);
  REQUIRE(r.seen.size() == 2);
  CHECK(r.seen[1] == Removal{"default", 1, RemovalCause::expired, at(1s)});
  timers.run_for(1000h);
  CHECK(map.size() == 1);
  CHECK(*map.get("forever") == 3);
  CHECK(timers.wheel().empty());  // an entry that never expires holds no wheel entry
  // assign restarts the write deadline with the ttl it is given.
  map.assign("forever", 4, 5ms);
  timers.run_for(5ms);
  REQUIRE(r.seen.size() == 4);
  CHECK(r.seen[2].cause == RemovalCause::replaced);
  CHECK(r.seen[3].key == "forever");
  CHECK(r.seen[3].cause == RemovalCause::expired);
}

TEST_CASE("assign replaces a value, insert keeps a live one, and past deadlines count as expired",
          "[expiring_map]") {
  ManualTimerService timers(1ms);
  Recorder r{&timers, {}};
  Map map(timers, {.expire_after_write = 100ms, .on_removal = r.listener()});
  CHECK(map.insert("k", 1));
  CHECK_FALSE(map.insert("k", 2));  // live: nothing changes
  CHECK(*map.peek("k") == 1);
  timers.run_for(30ms);
  map.assign("k", 3);  // the old value goes to the listener; the deadline restarts
  REQUIRE(r.seen.size() == 1);
  CHECK(r.seen[0] == Removal{"k", 1, RemovalCause::replaced, at(30ms)});
  CHECK(map.expires_at("k") == at(130ms));
  // Past its deadline, before the wheel removed it (time moved without
  // running the wheel): gone for lookups, replaced as expired.
  timers.clock().advance(100ms);
  CHECK_FALSE(map.contains("k"));
  CHECK(map.size() == 1);
  CHECK(map.insert("k", 4));
  REQUIRE(r.seen.size() == 2);
  CHECK(r.seen[1] == Removal{"k", 3, RemovalCause::expired, at(130ms)});
  CHECK(map.expires_at("k") == at(230ms));
  timers.run_for(0ns);
  CHECK(r.seen.size() == 2);
  CHECK(*map.get("k") == 4);
}

TEST_CASE("maximum_size evicts the least recently used entry", "[expiring_map]") {
  ManualTimerService timers(1ms);
  Recorder r{&timers, {}};
  Map map(timers, {.maximum_size = 3, .on_removal = r.listener()});
  map.insert("a", 1);
  map.insert("b", 2);
  map.insert("c", 3);
  REQUIRE(map.get("a"));  // order of use now: b, c, a
  map.assign("b", 20);    // a write is a use: c, a, b
  map.insert("d", 4);
  map.insert("e", 5);
  REQUIRE(r.seen.size() == 3);
  CHECK(r.seen[0].cause == RemovalCause::replaced);
  CHECK(r.seen[1] == Removal{"c", 3, RemovalCause::size, at(0ms)});
  CHECK(r.seen[2] == Removal{"a", 1, RemovalCause::size, at(0ms)});
  CHECK(map.size() == 3);
  std::set<std::string> keys;
  for (const auto& [k, v] : map) keys.insert(k);
  CHECK(keys == std::set<std::string>{"b", "d", "e"});
  CHECK(map.stats().removed(RemovalCause::size) == 2);
}

TEST_CASE("erase, erase_if and clear report explicit removals", "[expiring_map]") {
  ManualTimerService timers(1ms);
  Recorder r{&timers, {}};
  Map map(timers, {.expire_after_write = 1s, .on_removal = r.listener()});
  for (int i = 0; i < 10; ++i) map.insert("k" + std::to_string(i), i);
  CHECK(map.erase("k0"));
  CHECK_FALSE(map.erase("k0"));
  CHECK(map.erase_if([](const std::string&, int v) { return v % 2 == 1; }) == 5);
  CHECK(map.size() == 4);
  map.clear();
  CHECK(map.empty());
  CHECK(timers.wheel().empty());
  CHECK(r.seen.size() == 10);
  for (const auto& s : r.seen) CHECK(s.cause == RemovalCause::explicit_);
  CHECK(std::string(heartwheel::to_string(RemovalCause::explicit_)) == "explicit");
}

TEST_CASE("The removal listener may re-enter the map", "[expiring_map][reentrancy]") {
  ManualTimerService timers(1ms);
  std::vector<std::string> seen;
  Map* self = nullptr;
  Map map(timers, {.expire_after_write = 10ms,
                   .on_removal = [&](const std::string& k, int& v, RemovalCause c) {
                     seen.push_back(k + ":" + heartwheel::to_string(c));
                     if (k != "x") return;
                     // The expired key comes back (twice), and its partner,
                     // due on the same tick, is erased from inside the expiry.
                     if (v < 2) self->insert(k, v + 1);
                     self->erase("y");
                   }});
  self = &map;
  map.insert("x", 0);
  map.insert("y", 0);
  timers.run_for(10ms);
  CHECK(seen.size() == 2);  // x and y, in either order, y once
  CHECK(std::count(seen.begin(), seen.end(), "y:expired") == 1);
  CHECK(map.size() == 1);
  timers.run_for(100ms);
  CHECK(seen.size() == 4);  // x again at 20 ms and at 30 ms
  CHECK(std::count(seen.begin(), seen.end(), "x:expired") == 3);
  CHECK(map.empty());
  CHECK(timers.wheel().empty());
}

TEST_CASE("Iteration visits the live entries once each, through rehashes", "[expiring_map]") {
  ManualTimerService timers(1ms);
  ExpiringMap<int, int> map(timers);
  for (int i = 0; i < 5000; ++i) map.insert(i, i * 2, i % 2 ? 10ms : 0ms);
  timers.clock().advance(10ms);  // the odd ones are past their deadline, not yet removed
  CHECK(map.size() == 5000);
  std::size_t n = 0;
  for (const auto& [k, v] : map) {
    CHECK(k % 2 == 0);
    CHECK(v == k * 2);
    ++n;
  }
  CHECK(n == 2500);
  CHECK(std::distance(map.begin(), map.end()) == 2500);
  timers.run_for(0ns);
  CHECK(map.size() == 2500);
}

TEST_CASE("An entry is one block: the links, the wheel entry, the key and the value",
          "[expiring_map]") {
  CHECK(ExpiringMap<std::uint64_t, std::uint64_t>::entry_bytes() == 88 + 16);
}

TEST_CASE("An ExpiringMap on a LoopWheel expires on real time, never early", "[expiring_map][loop]") {
  uv_loop_t loop;
  REQUIRE(uv_loop_init(&loop) == 0);
  {
    heartwheel::LoopWheel wheel(&loop, {.tick = 1ms});
    std::vector<std::pair<int, TimePoint>> removed;
    ExpiringMap<int, TimePoint> map(wheel, {.on_removal = [&](const int& k, TimePoint& d, RemovalCause c) {
                                        CHECK(c == RemovalCause::expired);
                                        removed.emplace_back(k, d);
                                        CHECK(wheel.now() >= d);
                                      }});
    for (int i = 0; i < 20; ++i) {
      const Duration ttl = std::chrono::milliseconds(5 + 3 * i);
      map.insert(i, wheel.now() + ttl, ttl);
    }
    uv_run(&loop, UV_RUN_DEFAULT);  // returns once the wheel is empty
    CHECK(removed.size() == 20);
    CHECK(map.empty());
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}
