// The order in which push::DelayedQueue delivers (issue 34), against a real
// redis-server and a real Redis Cluster (claims to three masters): the
// pushes one queue holds come in due-time order, to the microsecond, whether
// it held them since their schedule or loaded them from Redis; pushes
// accepted one after another with one delay (accept_time) come in the order
// they were accepted; a push stored by an older version (a whole-millisecond
// score) is read as due at that millisecond. Before the fix the queue's
// wheel ran the pushes due on one tick in no particular order.
#include <heartwheel/common/error.h>

#include "delayed_queue_support.h"

namespace {

std::vector<std::string> numbers(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(std::to_string(i));
  return out;
}

// Schedules pushes "0", "1", ... due at due(i), all at once (pipelined), and
// waits until Redis has every one.
void schedule_all(TestLoop& t, push::DelayedQueue& q, int n,
                  const std::function<push::WallTime(int)>& due) {
  int accepted = 0;
  for (int i = 0; i < n; ++i)
    REQUIRE_FALSE(q.schedule("c", std::to_string(i), due(i),
                             [&](std::error_code ec, const push::DelayedPush&) {
                               CHECK_FALSE(ec);
                               ++accepted;
                             }));
  REQUIRE(t.run_until([&] { return accepted == n; }));
}

// One node on `Backend`, started, its first load done.
template <typename Backend>
struct Started {
  hwproc::Watchdog dog{Ms(90000)};
  Backend server;
  TestLoop t;
  Deliveries got;
  Node a{t, server.link(), fast_options(), got.recorder()};
  Started() {
    a.queue.start();
    REQUIRE(t.run_until([&] { return a.queue.stats().loads > 0; }));
  }
};

}  // namespace

TEMPLATE_TEST_CASE("Pushes one queue holds are delivered in due time order to the microsecond",
                   "[push][delayed][order][redis]", OneRedis, Cluster) {
  Started<TestType> node;
  TestLoop& t = node.t;
  Node& a = node.a;
  Deliveries& got = node.got;

  // 300 pushes 7 us apart: about two milliseconds, within one 5 ms tick.
  const auto base = push::WallClock::now() + 400ms;
  schedule_all(t, a.queue, 300, [&](int i) { return base + i * 7us; });
  CHECK(a.queue.held() == 300);  // inside the loaded window: held since accepted
  REQUIRE(t.run_until([&] { return got.total() >= 300; }, 15s));
  CHECK(got.in_order == numbers(0, 300));

  // Due in the reverse of the order they were scheduled: delivered by due time.
  got = Deliveries{};
  const auto later = push::WallClock::now() + 400ms;
  schedule_all(t, a.queue, 300, [&](int i) { return later + (299 - i) * 13us; });
  REQUIRE(t.run_until([&] { return got.total() >= 300; }, 15s));
  std::vector<std::string> reversed = numbers(0, 300);
  std::reverse(reversed.begin(), reversed.end());
  CHECK(got.in_order == reversed);
  CHECK(got.early == 0);
  CHECK(got.max_count() == 1);
}

TEMPLATE_TEST_CASE("Pushes loaded from Redis keep the order of their due times",
                   "[push][delayed][order][redis]", OneRedis, Cluster) {
  hwproc::Watchdog dog(Ms(90000));
  TestType server;
  TestLoop t;
  Deliveries got;
  // A schedules, then stops (forgetting what it held); B loads them from Redis.
  Node a(t, server.link(), fast_options(), got.recorder());
  a.queue.start();
  const auto base = push::WallClock::now() + 700ms;
  schedule_all(t, a.queue, 200, [&](int i) { return base + i * 3us; });
  a.queue.stop();
  CHECK(a.queue.held() == 0);
  Node b(t, server.link(), fast_options(), got.recorder());
  b.queue.start();
  REQUIRE(t.run_until([&] { return got.total() >= 200; }, 15s));
  CHECK(got.in_order == numbers(0, 200));
  CHECK(got.early == 0);
  CHECK(b.queue.stats().loaded == 200);
}

TEMPLATE_TEST_CASE("Pushes accepted one after another with one delay come in acceptance order",
                   "[push][delayed][order][redis]", OneRedis, Cluster) {
  Started<TestType> node;
  TestLoop& t = node.t;
  Node& a = node.a;
  Deliveries& got = node.got;
  // A burst: many accepted within one microsecond of the wall clock.
  push::WallTime previous{};
  schedule_all(t, a.queue, 500, [&](int) {
    const push::WallTime now = a.queue.accept_time();
    CHECK(now > previous);  // strictly later than the one before
    previous = now;
    return now + 300ms;
  });
  REQUIRE(t.run_until([&] { return got.total() >= 500; }, 15s));
  CHECK(got.in_order == numbers(0, 500));
}

TEST_CASE("A push stored with a whole-millisecond score is due at that millisecond",
          "[push][delayed][order][redis]") {
  hwproc::Watchdog dog(Ms(60000));
  OneRedis server;
  TestLoop t;
  Deliveries got;
  std::vector<push::DelayedPush> seen;
  Node a(t, server.link(), fast_options(), [&](const push::DelayedPush& p) {
    seen.push_back(p);
    got.recorder()(p);
  });
  // As a version before microseconds stored it: ZADD due <ms> id.
  const std::int64_t due_ms = push::to_unix_ms(push::WallClock::now()) + 300;
  const std::string id = "0b3cbb1e-6a36-4c0e-9a43-5f1c1e1de0c1";
  const std::string base = kPrefix + redis::Partitions(16).braced(redis::Partitions(16).of(id));
  server.server.command({"HSET", base + "data", id, "~0:1:cold"});
  server.server.command({"ZADD", base + "due", std::to_string(due_ms), id});
  // And one due a microsecond later, stored by this version: after it.
  a.queue.start();
  schedule(t, a.queue, "c", "new", push::from_unix_ms(due_ms) + 1us);
  REQUIRE(t.run_until([&] { return seen.size() == 2; }, 10s));
  CHECK(seen[0].id == id);
  CHECK(seen[0].data == "old");
  CHECK(seen[0].due == push::from_unix_ms(due_ms));
  CHECK(seen[1].data == "new");
  CHECK(seen[1].due == push::from_unix_ms(due_ms) + 1us);
  CHECK(got.early == 0);
}
