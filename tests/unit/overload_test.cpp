// Overload protection's socket-free parts: the pressure and scale arithmetic
// (overload.h), the activity order and its sweep cursor (activity_list.h),
// and the per-address counts (ip_limiter.h), also from several threads.
#include <arpa/inet.h>
#include <heartwheel/net/activity_list.h>
#include <heartwheel/net/detail/ip_limiter.h>
#include <heartwheel/net/overload.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace heartwheel;
using namespace heartwheel::net;
using namespace std::chrono_literals;

TEST_CASE("Pressure rises linearly from start to saturation in 256 steps", "[overload]") {
  CHECK(pressure_steps(0, 100, 200) == 0);
  CHECK(pressure_steps(100, 100, 200) == 0);
  CHECK(pressure_steps(150, 100, 200) == 128);
  CHECK(pressure_steps(199, 100, 200) == 253);
  CHECK(pressure_steps(200, 100, 200) == kPressureSteps);
  CHECK(pressure_steps(5000, 100, 200) == kPressureSteps);
  CHECK(pressure_steps(150, 0, 0) == 0);  // no thresholds: no pressure
  // Sizes in bytes near 2^64 do not overflow.
  const std::uint32_t three_quarters = pressure_steps(SIZE_MAX / 4 * 3, 0, SIZE_MAX);
  CHECK(three_quarters >= 191);
  CHECK(three_quarters <= 192);
}

TEST_CASE("Scaled timeouts shrink to the floor of min_timeout or min_scale and never grow",
          "[overload]") {
  OverloadOptions by_timeout;
  by_timeout.min_timeout = 2s;
  CHECK(scaled_timeout(30s, 0, by_timeout) == 30s);
  CHECK(scaled_timeout(30s, kPressureSteps, by_timeout) == 2s);
  CHECK(scaled_timeout(30s, kPressureSteps / 2, by_timeout) == 16s);  // 2 + 28 / 2
  CHECK(scaled_timeout(1s, kPressureSteps, by_timeout) == 1s);        // already below the floor
  CHECK(scaled_timeout(0s, kPressureSteps, by_timeout) == 0s);        // off stays off

  OverloadOptions by_scale;
  by_scale.min_scale = 0.25;
  CHECK(scaled_timeout(40s, kPressureSteps, by_scale) == 10s);
  CHECK(scaled_timeout(40s, kPressureSteps / 4, by_scale) == 32500ms);  // 10 + 30 * 3/4
  // A "never" timeout stays huge and positive (no overflow).
  CHECK(scaled_timeout(Duration::max(), kPressureSteps / 2, by_scale) > 1000000h);

  IdlePolicy base{.read_idle = 30s, .write_idle = 10s, .all_idle = 0s, .max_age = 1h};
  const IdlePolicy p = scaled_policy(base, kPressureSteps, by_timeout);
  CHECK(p.read_idle == 2s);
  CHECK(p.write_idle == 2s);
  CHECK(p.all_idle == 0s);
  CHECK(p.max_age == 1h);  // not an idle timeout
}

TEST_CASE("Overload options refuse contradictions with the field named", "[overload]") {
  OverloadOptions o;
  CHECK_FALSE(o.scaling());
  CHECK_FALSE(o.tracks_activity());
  o.validate();
  o.start_connections = 10;
  o.saturation_connections = 10;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("saturation_connections"));
  o.saturation_connections = 20;
  CHECK_FALSE(o.scaling());  // no floor below 1 yet
  o.min_scale = 0.5;
  CHECK(o.scaling());
  o.min_timeout = 1s;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("not both"));
  o.min_scale = 1.5;
  o.min_timeout = 0s;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("min_scale"));
  OverloadOptions d;
  d.drop_idle_at_limit = true;
  CHECK(d.tracks_activity());
  d.activity_granularity = 500us;
  CHECK_THROWS_WITH(d.validate(), Catch::Contains("activity_granularity"));
  // Automatic granularity: 1 s, or an eighth of the shortest read-side
  // timeout at saturation.
  d.activity_granularity = 0s;
  d.validate();
  CHECK(activity_granularity_for(d, IdlePolicy{.read_idle = 30s}) == 1s);  // no scaling
  OverloadOptions s;
  s.saturation_connections = 100;
  s.min_timeout = 2s;
  CHECK(activity_granularity_for(s, IdlePolicy{.read_idle = 30s}) == 250ms);
  CHECK(activity_granularity_for(s, IdlePolicy{.write_idle = 30s}) == 1s);  // not read-side
  s.activity_granularity = 64ms;
  CHECK(activity_granularity_for(s, IdlePolicy{.read_idle = 30s}) == 64ms);
  CHECK(activity_shift(1s) == 29);  // 2^29 ns = 0.54 s <= 1 s < 2^30 ns
  CHECK(activity_shift(1ms) == 19);
}

namespace {

struct Node {
  int id = 0;
  TimePoint last_read{};
  Node* next_in_host = nullptr;
  Node* prev_in_host = nullptr;
  std::uint16_t host_activity_gen = 0;
};

std::vector<int> back_to_front(const ActivityList<Node>& list) {
  std::vector<int> ids;
  for (Node* n = list.back(); n; n = n->prev_in_host) ids.push_back(n->id);
  return ids;
}

}  // namespace

TEST_CASE("A reading node moves to the front at most once per generation", "[overload][activity]") {
  std::vector<Node> nodes(4);
  ActivityList<Node> list;
  for (int i = 0; i < 4; ++i) {
    nodes[i].id = i;
    list.push_front(nodes[i], 7);
  }
  CHECK(back_to_front(list) == std::vector<int>{0, 1, 2, 3});
  CHECK_FALSE(list.touch(nodes[0], 7));  // read again in the same generation: stays
  CHECK(back_to_front(list) == std::vector<int>{0, 1, 2, 3});
  CHECK(list.touch(nodes[0], 8));
  CHECK(back_to_front(list) == std::vector<int>{1, 2, 3, 0});
  CHECK(list.touch(nodes[2], 8));
  CHECK_FALSE(list.touch(nodes[2], 8));
  CHECK(back_to_front(list) == std::vector<int>{1, 3, 0, 2});
  list.remove(nodes[3]);
  CHECK(back_to_front(list) == std::vector<int>{1, 0, 2});
  CHECK(list.size() == 3);
  CHECK(list.back() == &nodes[1]);
  CHECK(list.front() == &nodes[2]);
  // The generation is the time in units of 2^shift ns.
  CHECK(activity_generation(TimePoint(3s), 30) == 2);
}

TEST_CASE("The sweep cursor never dangles and every node it passed stays visited",
          "[overload][activity]") {
  std::vector<Node> nodes(5);
  ActivityList<Node> list;
  for (int i = 0; i < 5; ++i) {
    nodes[i].id = i;
    list.push_front(nodes[i], 1);
  }
  list.restart_sweep();
  REQUIRE(list.cursor() == &nodes[0]);
  list.advance();  // 0 visited
  REQUIRE(list.cursor() == &nodes[1]);
  list.remove(nodes[1]);  // the cursor's node leaves: the next unvisited one
  CHECK(list.cursor() == &nodes[2]);
  list.touch(nodes[2], 2);  // it reads: still unvisited, now at the front
  CHECK(list.cursor() == &nodes[3]);
  list.touch(nodes[0], 2);  // a visited one reads: the cursor stays
  CHECK(list.cursor() == &nodes[3]);
  std::vector<int> visited;
  while (Node* n = list.cursor()) {
    visited.push_back(n->id);
    list.advance();
  }
  CHECK(visited == std::vector<int>{3, 4, 2, 0});
  list.restart_sweep();
  list.stop_sweep();
  CHECK(list.cursor() == nullptr);
}

TEST_CASE("A sweep step visits the back of the order while it is due within the lead, then waits",
          "[overload][activity]") {
  // Read at 0, 1, 2, ... 9 s (oldest at the back), read-side timeout 5 s.
  std::vector<Node> nodes(10);
  ActivityList<Node> list;
  for (int i = 0; i < 10; ++i) {
    nodes[i].id = i;
    nodes[i].last_read = TimePoint(std::chrono::seconds(i));
    list.push_front(nodes[i], 0);
  }
  list.restart_sweep();
  std::vector<int> visited;
  auto anchor = [](Node& n) { return n.last_read; };
  auto visit = [&](Node& n) { visited.push_back(n.id); };
  std::size_t budget = 100;
  // At 6 s, generations of 500 ms: due at 5, 6, 7 s (within 1 s) are
  // visited; 8 s is not yet.
  TimePoint next = list.sweep(TimePoint(6s), 5s, 500ms, budget, anchor, visit);
  CHECK(visited == std::vector<int>{0, 1, 2});
  CHECK(next == TimePoint(7s));  // node 3 (due at 8 s) comes within reach
  CHECK(budget == 97);
  budget = 2;  // a small budget stops early and asks to go on at once
  next = list.sweep(TimePoint(10s), 5s, 500ms, budget, anchor, visit);
  CHECK(visited == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(next == TimePoint(10s));
  budget = 100;
  // Node 5 is due at 10 s: visited; node 6 at 11 s is in reach at 10 s, but
  // the next step comes no sooner than one generation from now.
  next = list.sweep(TimePoint(9900ms), 5s, 500ms, budget, anchor, visit);
  CHECK(visited.size() == 6);
  CHECK(next == TimePoint(10400ms));
  next = list.sweep(TimePoint(100s), 5s, 500ms, budget, anchor, visit);
  CHECK(visited.size() == 10);
  CHECK(next == kNever);  // every node visited
}

namespace {

sockaddr_storage v4(const char* text) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in&>(ss);
  a.sin_family = AF_INET;
  REQUIRE(inet_pton(AF_INET, text, &a.sin_addr) == 1);
  return ss;
}

sockaddr_storage v6(const char* text) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in6&>(ss);
  a.sin6_family = AF_INET6;
  REQUIRE(inet_pton(AF_INET6, text, &a.sin6_addr) == 1);
  return ss;
}

const sockaddr& sa(const sockaddr_storage& ss) { return reinterpret_cast<const sockaddr&>(ss); }

}  // namespace

TEST_CASE("The per-address limiter counts, refuses over the limit and forgets at zero",
          "[overload][ip_limit]") {
  CHECK_THROWS_AS(detail::IpLimiter(0), std::invalid_argument);
  detail::IpLimiter limiter(2);
  const auto a = v4("192.0.2.1"), b = v4("192.0.2.2");
  const auto a1 = limiter.acquire(sa(a));
  const auto a2 = limiter.acquire(sa(a));
  CHECK(a1.admitted);
  CHECK(a2.admitted);
  CHECK(a1.handle != 0);
  const auto a3 = limiter.acquire(sa(a));
  CHECK_FALSE(a3.admitted);
  CHECK(a3.handle == 0);
  CHECK(limiter.acquire(sa(b)).admitted);  // another address has its own count
  CHECK(limiter.count(sa(a)) == 2);
  limiter.release(a1.handle);
  CHECK(limiter.count(sa(a)) == 1);
  CHECK(limiter.acquire(sa(a)).admitted);  // room again
  CHECK(limiter.addresses() == 2);
  limiter.release(a2.handle);
  limiter.release(0);  // nothing
  // An IPv4-mapped IPv6 address is its IPv4 address.
  CHECK(limiter.count(sa(v6("::ffff:192.0.2.1"))) == 1);
  CHECK(limiter.acquire(sa(v6("2001:db8::1"))).admitted);
  sockaddr_storage unix_address{};
  unix_address.ss_family = AF_UNIX;
  const auto u = limiter.acquire(sa(unix_address));
  CHECK(u.admitted);  // not counted
  CHECK(u.handle == 0);
}

TEST_CASE("Worker threads share one count per address under the limiter",
          "[overload][ip_limit][threads]") {
  detail::IpLimiter limiter(100);
  const auto a = v4("198.51.100.7");
  std::vector<std::thread> threads;
  std::vector<int> admitted(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::uint32_t> handles;
      for (int i = 0; i < 1000; ++i) {
        // Each thread takes what it can, gives half back, takes again.
        const auto r = limiter.acquire(sa(a));
        if (r.admitted) handles.push_back(r.handle);
        if (i % 2 == 1 && !handles.empty()) {
          limiter.release(handles.back());
          handles.pop_back();
        }
      }
      admitted[t] = static_cast<int>(handles.size());
    });
  for (auto& t : threads) t.join();
  int held = 0;
  for (int n : admitted) held += n;
  CHECK(held <= 100);
  CHECK(limiter.count(sa(a)) == static_cast<std::size_t>(held));
}
