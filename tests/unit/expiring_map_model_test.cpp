// Seeded randomized comparison of ExpiringMap against a plain reference
// (std::unordered_map of values and deadlines, std::map for recency) over
// millions of operations on hand-advanced time: every lookup, every size,
// every removal with its cause and value, and every expiry at exactly the
// tick of its deadline (never early). On failure Catch prints the seed and
// the step.
#include <heartwheel/timer/expiring_map.h>
#include <heartwheel/timer/virtual_clock.h>

#include <catch2/catch.hpp>

#include "model_require.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::deadline_after;
using heartwheel::Duration;
using heartwheel::ExpiringMap;
using heartwheel::kNever;
using heartwheel::ManualTimerService;
using heartwheel::RemovalCause;
using heartwheel::TimePoint;


namespace {

using Key = std::uint32_t;
using Value = std::uint64_t;

struct Event {
  Key key;
  Value value;
  RemovalCause cause;
  TimePoint when;
  auto tie() const { return std::tie(when, key, value, cause); }
  bool operator<(const Event& o) const { return tie() < o.tie(); }
  bool operator==(const Event& o) const { return tie() == o.tie(); }
};

struct Config {
  Duration tick;
  Duration expire_after_write;
  Duration expire_after_access;
  std::size_t maximum_size;
  Key keys;  // keys are drawn from [0, keys)
};

class Model {
 public:
  Model(std::uint64_t seed, const Config& c)
      : cfg_(c),
        rng_(seed),
        timers_(c.tick),
        map_(timers_, {.expire_after_write = c.expire_after_write,
                       .expire_after_access = c.expire_after_access,
                       .maximum_size = c.maximum_size,
                       .on_removal = [this](const Key& k, Value& v, RemovalCause cause) {
                         seen_.push_back({k, v, cause, timers_.now()});
                       }}) {}

  void step() {
    const Key k = static_cast<Key>(rng_() % cfg_.keys);
    const unsigned r = rng_() % 100;
    if (r < 20) insert(k, false);
    else if (r < 35) insert(k, true);
    else if (r < 65) get(k);
    else if (r < 72) peek(k);
    else if (r < 78) erase(k);
    else if (r < 79 && rng_() % 50 == 0) erase_some();
    else if (r < 80 && rng_() % 500 == 0) clear();
    else run(random_step());
    MODEL_REQUIRE(map_.size() == ref_.size());
    if (rng_() % 1024 == 0) check_all();
  }

  void drain() {
    // Everything left that expires must go, each on its own tick.
    for (int i = 0; i < 64 && !timers_.wheel().empty(); ++i) run(std::chrono::hours(24 * 365));
    check_all();
  }

  std::uint64_t expired() const { return map_.stats().removed(RemovalCause::expired); }

 private:
  struct Ref {
    Value value;
    TimePoint write_deadline;
    TimePoint deadline;
    std::uint64_t used;  // recency stamp
  };

  TimePoint now() const { return timers_.now(); }
  bool live(const Ref& r) const { return r.deadline > now(); }
  TimePoint on_tick(TimePoint t) const {
    const auto tick = cfg_.tick.count();
    const auto ns = t.time_since_epoch().count();
    return TimePoint(Duration((ns + tick - 1) / tick * tick));
  }

  Duration random_ttl() {
    switch (rng_() % 10) {
      case 0: return Duration::zero();  // never (by write)
      case 1: return Duration(rng_() % (cfg_.tick.count() * 2) + 1);
      case 2: case 3: case 4: return Duration(rng_() % (cfg_.tick.count() * 64) + 1);
      case 5: case 6: case 7: return Duration(rng_() % (cfg_.tick.count() * 5000) + 1);
      case 8: return Duration(rng_() % (cfg_.tick.count() * 300000) + 1);
      default: return cfg_.expire_after_write;  // the map's default, given explicitly
    }
  }
  Duration random_step() {
    switch (rng_() % 8) {
      case 0: return Duration::zero();
      case 1: case 2: return Duration(rng_() % cfg_.tick.count());
      case 3: case 4: return Duration(rng_() % (cfg_.tick.count() * 4));
      case 5: case 6: return Duration(rng_() % (cfg_.tick.count() * 200));
      default: return Duration(rng_() % (cfg_.tick.count() * 20000));
    }
  }

  // Every change of a deadline goes through here, to keep by_due_ in step.
  void set_deadline(Key k, Ref& r, TimePoint d) {
    if (r.deadline != kNever) by_due_.erase({on_tick(r.deadline), k});
    r.deadline = d;
    if (d != kNever) by_due_.insert({on_tick(d), k});
  }
  void remove(std::unordered_map<Key, Ref>::iterator it) {
    set_deadline(it->first, it->second, kNever);
    ref_.erase(it);
  }
  void set_deadlines(Key k, Ref& r, Duration ttl) {
    r.write_deadline = deadline_after(now(), ttl);
    set_deadline(k, r, std::min(r.write_deadline, deadline_after(now(), cfg_.expire_after_access)));
    r.used = ++clock_;
  }

  void insert(Key k, bool assign) {
    const Value v = rng_();
    const bool own_ttl = rng_() % 2;
    const Duration ttl = own_ttl ? random_ttl() : cfg_.expire_after_write;
    std::vector<Event> want;
    bool inserted = true;
    if (auto it = ref_.find(k); it != ref_.end()) {
      Ref& r = it->second;
      if (live(r) && !assign) {
        inserted = false;
      } else {
        want.push_back({k, r.value, live(r) ? RemovalCause::replaced : RemovalCause::expired, now()});
        r.value = v;
        set_deadlines(k, r, ttl);
      }
    } else {
      Ref& r = ref_.emplace(k, Ref{v, kNever, kNever, 0}).first->second;
      set_deadlines(k, r, ttl);
      while (cfg_.maximum_size && ref_.size() > cfg_.maximum_size) {
        auto victim = std::min_element(ref_.begin(), ref_.end(), [](const auto& a, const auto& b) {
          return a.second.used < b.second.used;
        });
        want.push_back({victim->first, victim->second.value,
                        live(victim->second) ? RemovalCause::size : RemovalCause::expired, now()});
        remove(victim);
      }
    }
    bool got;
    if (assign) {
      if (own_ttl) map_.assign(k, v, ttl);
      else map_.assign(k, v);
      got = true;
      inserted = true;
    } else {
      got = own_ttl ? map_.insert(k, v, ttl) : map_.insert(k, v);
    }
    MODEL_REQUIRE(got == inserted);
    expect(want);
  }

  void get(Key k) {
    Value* v = map_.get(k);
    auto it = ref_.find(k);
    if (it == ref_.end() || !live(it->second)) {
      MODEL_REQUIRE(v == nullptr);
      return;
    }
    MODEL_REQUIRE(v != nullptr && *v == it->second.value);
    Ref& r = it->second;
    set_deadline(k, r, std::min(r.write_deadline, deadline_after(now(), cfg_.expire_after_access)));
    r.used = ++clock_;
    MODEL_REQUIRE(map_.expires_at(k) == r.deadline);
  }

  void peek(Key k) {
    const Value* v = std::as_const(map_).peek(k);
    auto it = ref_.find(k);
    const bool is_live = it != ref_.end() && live(it->second);
    MODEL_REQUIRE((v != nullptr) == is_live);
    MODEL_REQUIRE(map_.contains(k) == is_live);
    if (is_live) {
      MODEL_REQUIRE(*v == it->second.value);
      MODEL_REQUIRE(map_.expires_at(k) == it->second.deadline);
    } else {
      MODEL_REQUIRE(!map_.expires_at(k));
    }
  }

  void erase(Key k) {
    std::vector<Event> want;
    bool was_live = false;
    if (auto it = ref_.find(k); it != ref_.end()) {
      was_live = live(it->second);
      want.push_back({k, it->second.value, was_live ? RemovalCause::explicit_ : RemovalCause::expired, now()});
      remove(it);
    }
    MODEL_REQUIRE(map_.erase(k) == was_live);
    expect(want);
  }

  void erase_some() {
    const Value mask = 3;
    std::vector<Event> want;
    for (auto it = ref_.begin(); it != ref_.end();) {
      if ((it->second.value & mask) == 0) {
        want.push_back({it->first, it->second.value,
                        live(it->second) ? RemovalCause::explicit_ : RemovalCause::expired, now()});
        remove(it++);
      } else {
        ++it;
      }
    }
    MODEL_REQUIRE(map_.erase_if([&](const Key&, const Value& v) { return (v & mask) == 0; }) == want.size());
    expect(want);
  }

  void clear() {
    std::vector<Event> want;
    for (const auto& [k, r] : ref_)
      want.push_back({k, r.value, live(r) ? RemovalCause::explicit_ : RemovalCause::expired, now()});
    ref_.clear();
    by_due_.clear();
    map_.clear();
    expect(want);
  }

  // Time moves by d: every entry whose deadline's tick is reached goes, on
  // that tick exactly, as expired.
  void run(Duration d) {
    const TimePoint end = now() + d;
    std::vector<Event> want;
    while (!by_due_.empty() && by_due_.begin()->first <= end) {
      const auto [due, k] = *by_due_.begin();
      auto it = ref_.find(k);
      want.push_back({k, it->second.value, RemovalCause::expired, due});
      remove(it);
    }
    timers_.run_for(d);
    expect(want);
  }

  void expect(std::vector<Event>& want) {
    std::sort(want.begin(), want.end());
    std::sort(seen_.begin(), seen_.end());
    if (want != seen_) {
      auto show = [](const std::vector<Event>& v) {
        std::string s;
        for (const auto& e : v)
          s += " (" + std::to_string(e.key) + " " + heartwheel::to_string(e.cause) + " at " +
               std::to_string(e.when.time_since_epoch().count()) + ")";
        return s;
      };
      FAIL("removals at op " << g_model_op << ": want" << show(want) << "\n  seen" << show(seen_));
    }
    seen_.clear();
  }

  void check_all() {
    std::vector<std::pair<Key, Value>> want, got;
    for (const auto& [k, r] : ref_)
      if (live(r)) want.emplace_back(k, r.value);
    for (const auto& [k, v] : map_) got.emplace_back(k, v);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    MODEL_REQUIRE(want == got);
    timers_.wheel().validate();
  }

  Config cfg_;
  std::mt19937_64 rng_;
  ManualTimerService timers_;
  ExpiringMap<Key, Value> map_;
  std::unordered_map<Key, Ref> ref_;
  std::set<std::pair<TimePoint, Key>> by_due_;  // (the tick of each finite deadline, key)
  std::uint64_t clock_ = 0;
  std::vector<Event> seen_;
};

void run_model(std::uint64_t seed, const Config& c, std::size_t ops) {
  INFO("seed " << seed << " tick " << c.tick.count() << "ns, write " << c.expire_after_write.count()
                << "ns, access " << c.expire_after_access.count() << "ns, max " << c.maximum_size);
  Model m(seed, c);
  for (std::size_t op = 0; op < ops; ++op) {
    g_model_op = op;
    m.step();
  }
  m.drain();
  CHECK(m.expired() > ops / 100);
}

}  // namespace

TEST_CASE("ExpiringMap matches the reference: per-entry ttl only", "[expiring_map][model]") {
  run_model(1, {1ms, 0ms, 0ms, 0, 2000}, 1'000'000);
}

TEST_CASE("ExpiringMap matches the reference: expire after write and after access",
          "[expiring_map][model]") {
  run_model(2, {1ms, 30s, 150ms, 0, 2000}, 1'000'000);
}

TEST_CASE("ExpiringMap matches the reference: a size bound with expiry", "[expiring_map][model]") {
  run_model(3, {1ms, 500ms, 40ms, 64, 300}, 600'000);
}

TEST_CASE("ExpiringMap matches the reference: a coarse tick and few keys", "[expiring_map][model]") {
  run_model(4, {10ms, 2s, 0ms, 16, 40}, 400'000);
}
