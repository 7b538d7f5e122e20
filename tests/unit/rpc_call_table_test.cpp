// The client's call deadline table, driven by hand-advanced time.
#include <heartwheel/common/error.h>
#include <heartwheel/rpc/call_table.h>
#include <heartwheel/timer/virtual_clock.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::errc;
using heartwheel::ManualTimerService;
using namespace heartwheel::rpc;

namespace {

struct Done {
  std::uint64_t id;
  CallStatus status;
  std::string payload;
  void* context;
  heartwheel::Duration elapsed;
  std::error_code reason;
};

struct Recorder final : CallListener {
  void on_call_done(const CallCompletion& d) override {
    done.push_back({d.id, d.status, std::string(d.payload), d.context, d.elapsed, d.reason});
    if (hook) hook(d);
  }
  std::vector<Done> done;
  std::function<void(const CallCompletion&)> hook;
};

std::uint64_t start(CallTable& t, heartwheel::Duration timeout, void* ctx = nullptr) {
  std::error_code ec;
  const auto id = t.start(timeout, ctx, ec);
  REQUIRE(!ec);
  REQUIRE(id != 0);
  return id;
}

}  // namespace

TEST_CASE("A reply before the deadline completes the call ok and clears its entry", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  int ctx = 0;
  const auto id = start(table, 100ms, &ctx);
  CHECK(table.in_flight() == 1);
  CHECK(timers.wheel().size() == 1);
  timers.run_for(40ms);
  CHECK(table.complete(id, "pong") == ReplyDisposition::delivered);
  REQUIRE(rec.done.size() == 1);
  CHECK(rec.done[0].status == CallStatus::ok);
  CHECK(rec.done[0].payload == "pong");
  CHECK(rec.done[0].context == &ctx);
  CHECK(rec.done[0].elapsed == 40ms);
  CHECK(table.in_flight() == 0);
  CHECK(timers.wheel().empty());  // the deadline entry is gone
  timers.run_for(1s);
  CHECK(rec.done.size() == 1);  // and never fires
}

TEST_CASE("An unanswered call times out at its deadline, not before", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  const auto id = start(table, 100ms);
  timers.run_for(99ms);
  CHECK(rec.done.empty());
  timers.run_for(1ms);
  REQUIRE(rec.done.size() == 1);
  CHECK(rec.done[0].id == id);
  CHECK(rec.done[0].status == CallStatus::timed_out);
  CHECK(rec.done[0].reason == errc::timed_out);
  CHECK(rec.done[0].elapsed == 100ms);
  CHECK(table.stats().timed_out == 1);
  CHECK(!table.pending(id));
}

TEST_CASE("A reply after the timeout is counted as late and not delivered", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  const auto id = start(table, 50ms);
  timers.run_for(60ms);
  REQUIRE(rec.done.size() == 1);
  CHECK(table.complete(id, "too late") == ReplyDisposition::late);
  CHECK(rec.done.size() == 1);  // still exactly one completion
  CHECK(table.stats().late_replies == 1);
  CHECK(table.stats().ok == 0);
}

TEST_CASE("A second reply to an answered call is a duplicate, an invented id unknown",
          "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  const auto id = start(table, 50ms);
  CHECK(table.complete(id, "a") == ReplyDisposition::delivered);
  CHECK(table.complete(id, "b") == ReplyDisposition::duplicate);
  CHECK(table.complete(0, "") == ReplyDisposition::unknown);
  CHECK(table.complete(id + (std::uint64_t{5} << 32), "") == ReplyDisposition::unknown);  // future generation
  CHECK(table.complete(0xffffffffULL | (1ULL << 32), "") == ReplyDisposition::unknown);  // no such slot
  CHECK(rec.done.size() == 1);
  CHECK(table.stats().duplicate_replies == 1);
  CHECK(table.stats().unknown_replies == 3);
}

TEST_CASE("An ERROR reply completes the call with status error", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  const auto id = start(table, 50ms);
  CHECK(table.complete(id, "no such method", true) == ReplyDisposition::delivered);
  REQUIRE(rec.done.size() == 1);
  CHECK(rec.done[0].status == CallStatus::error);
  CHECK(rec.done[0].payload == "no such method");
  CHECK(table.stats().errors == 1);
}

TEST_CASE("Records are reused oldest first, with fresh ids, and a stale id is late", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  const auto first = start(table, 10ms);
  timers.run_for(20ms);  // times out
  // Reuse the whole first chunk until `first`'s record comes round again.
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < table.capacity(); ++i) {
    ids.push_back(start(table, 0ms));
    CHECK(table.complete(ids.back(), "") == ReplyDisposition::delivered);
  }
  CHECK(table.capacity() == 256);  // no growth: one call in flight at a time
  CHECK(std::find(ids.begin(), ids.end(), first) == ids.end());  // ids never repeat
  CHECK(table.complete(first, "") == ReplyDisposition::late);
}

TEST_CASE("The pool grows by chunks while more calls are in flight", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(start(table, 1s));
  CHECK(table.in_flight() == 1000);
  CHECK(table.capacity() == 1024);
  CHECK(timers.wheel().size() == 1000);
  for (auto id : ids) CHECK(table.complete(id, "") == ReplyDisposition::delivered);
  CHECK(timers.wheel().empty());
  CHECK(table.stats().peak_in_flight == 1000);
}

TEST_CASE("max_in_flight refuses extra calls with limit_reached", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec, {.max_in_flight = 2});
  start(table, 1s);
  start(table, 1s);
  std::error_code ec;
  CHECK(table.start(1s, nullptr, ec) == 0);
  CHECK(ec == errc::limit_reached);
  CHECK(table.stats().refused == 1);
  CHECK(table.in_flight() == 2);
}

TEST_CASE("fail_all completes every call in flight as failed, once", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  const auto a = start(table, 100ms);
  start(table, 0ms);  // no deadline
  start(table, 200ms);
  CHECK(table.fail_all(heartwheel::make_error_code(errc::closed)) == 3);
  REQUIRE(rec.done.size() == 3);
  for (const auto& d : rec.done) {
    CHECK(d.status == CallStatus::failed);
    CHECK(d.reason == errc::closed);
  }
  CHECK(timers.wheel().empty());
  timers.run_for(1s);
  CHECK(rec.done.size() == 3);
  CHECK(table.complete(a, "") == ReplyDisposition::late);
}

TEST_CASE("A listener may start calls from inside fail_all and those are not failed", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  std::vector<std::uint64_t> restarted;
  rec.hook = [&](const CallCompletion& d) {
    if (d.status == CallStatus::failed) restarted.push_back(start(table, 50ms));
  };
  start(table, 100ms);
  start(table, 100ms);
  CHECK(table.fail_all(heartwheel::make_error_code(errc::closed)) == 2);
  CHECK(restarted.size() == 2);
  CHECK(table.in_flight() == 2);
  for (auto id : restarted) CHECK(table.pending(id));
  timers.run_for(50ms);
  CHECK(table.stats().timed_out == 2);
}

TEST_CASE("A timeout callback may complete another call due in the same tick", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  const auto a = start(table, 10ms);
  const auto b = start(table, 10ms);
  rec.hook = [&](const CallCompletion& d) {
    const auto other = d.id == a ? b : a;
    if (d.status == CallStatus::timed_out) table.complete(other, "answered meanwhile");
  };
  timers.run_for(10ms);
  REQUIRE(rec.done.size() == 2);
  CHECK(rec.done[0].status == CallStatus::timed_out);
  CHECK(rec.done[1].status == CallStatus::ok);
  CHECK(table.in_flight() == 0);
  CHECK(timers.wheel().empty());
}

TEST_CASE("fail() gives up on one call and the table clock measures elapsed time", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  static heartwheel::TimePoint fake_now{};
  CallTable table(timers, rec, {.clock = []() noexcept { return fake_now; }});
  const auto id = start(table, 1s);
  fake_now += 1234us;
  CHECK(table.fail(id, heartwheel::make_error_code(errc::shutting_down)));
  CHECK(!table.fail(id, {}));
  REQUIRE(rec.done.size() == 1);
  CHECK(rec.done[0].elapsed == 1234us);
  CHECK(rec.done[0].reason == errc::shutting_down);
}

TEST_CASE("Destroying the table disarms its entries without callbacks", "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  {
    CallTable table(timers, rec);
    start(table, 10ms);
    start(table, 20ms);
    CHECK(timers.wheel().size() == 2);
  }
  CHECK(timers.wheel().empty());
  timers.run_for(1s);
  CHECK(rec.done.empty());
}

TEST_CASE("fail_group fails only the calls of that group and completions name their group",
          "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  std::vector<CallGroup*> groups;
  rec.hook = [&](const CallCompletion& d) { groups.push_back(d.group); };
  CallTable table(timers, rec);
  CallGroup a, b;
  std::error_code ec;
  const auto a1 = table.start(100ms, nullptr, ec, &a);
  const auto b1 = table.start(100ms, nullptr, ec, &b);
  const auto a2 = table.start(100ms, nullptr, ec, &a);
  const auto loose = start(table, 100ms);
  CHECK(a.size() == 2);
  CHECK(b.size() == 1);
  CHECK(table.fail_group(a, make_error_code(errc::closed)) == 2);
  CHECK(a.size() == 0);
  REQUIRE(rec.done.size() == 2);
  CHECK(((rec.done[0].id == a1 && rec.done[1].id == a2) ||
         (rec.done[0].id == a2 && rec.done[1].id == a1)));
  CHECK(groups == std::vector<CallGroup*>{&a, &a});
  CHECK(table.pending(b1));
  CHECK(table.pending(loose));
  CHECK(table.complete(b1, "ok") == ReplyDisposition::delivered);
  CHECK(b.size() == 0);
  CHECK(groups.back() == &b);
}

TEST_CASE("A reply arriving on another group is unknown and leaves the call pending",
          "[rpc][calls]") {
  ManualTimerService timers;
  Recorder rec;
  CallTable table(timers, rec);
  CallGroup mine, other;
  std::error_code ec;
  const auto id = table.start(100ms, nullptr, ec, &mine);
  CHECK(table.complete(id, "x", false, &other) == ReplyDisposition::unknown);
  CHECK(table.stats().unknown_replies == 1);
  CHECK(table.pending(id));
  CHECK(table.complete(id, "x", false, &mine) == ReplyDisposition::delivered);
  CHECK(rec.done.size() == 1);
}
