// HashedWheelTimer: the behaviours of SEEDS.md (Netty's tests, in spirit) and
// the rest of the contract in hashed_wheel_timer.h.
//
// The timers here run on a VirtualClock: time moves only when the test calls
// clock->advance(d), which steps the worker through each of its wake-ups and
// returns once it has run everything due and gone back to sleep. So these
// tests do not sleep, and their results (how many runs, at which instant)
// are exact whatever the machine's load. Two cases at the end run on the
// real steady clock, to prove it still works. Label `threads`: they also run
// under ThreadSanitizer.
#include <heartwheel/common/log.h>
#include <heartwheel/timer/hashed_wheel_timer.h>
#include <heartwheel/timer/virtual_clock.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Clock;
using heartwheel::Duration;
using heartwheel::HashedWheelTimer;
using heartwheel::Timeout;
using heartwheel::TimePoint;
using heartwheel::VirtualClock;

namespace {

// Options for a timer on `clock` (the other options at their defaults).
HashedWheelTimer::Options on(const std::shared_ptr<VirtualClock>& clock,
                             Duration tick = HashedWheelTimer::kDefaultTick,
                             int ticks_per_wheel = HashedWheelTimer::kDefaultTicksPerWheel) {
  HashedWheelTimer::Options options;
  options.tick = tick;
  options.ticks_per_wheel = ticks_per_wheel;
  options.clock = clock;
  return options;
}

// Virtual time since the clock's start (TimePoint{}), for exact checks.
Duration at(const VirtualClock& clock) { return clock.now().time_since_epoch(); }

// Polls `done` until it holds or `limit` (real time) passes; returns whether
// it held. Only for what the clock does not wait for: other threads
// (executors, producers) and the real-clock cases.
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds limit = 5000ms) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Takes the process log's lines (heartwheel/common/log.h, where the timer's
// errors go) for the scope. Construct before the timer and destroy after it
// stopped, so the worker never writes while the sink is swapped.
class CerrCapture {
 public:
  CerrCapture() : saved_(heartwheel::log::options()) {
    heartwheel::log::Options o = saved_;
    o.sink = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mutex_);
      text_.append(line).append("\n");
    };
    heartwheel::log::configure(std::move(o));
  }
  ~CerrCapture() { heartwheel::log::configure(saved_); }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 private:
  heartwheel::log::Options saved_;
  mutable std::mutex mutex_;
  std::string text_;
};

// A one-thread executor, standing in for a user's thread pool.
class SerialExecutor {
 public:
  SerialExecutor() : thread_([this] { loop(); }) {}
  ~SerialExecutor() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  HashedWheelTimer::Executor executor() {
    return [this](std::function<void()> job) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        jobs_.push_back(std::move(job));
      }
      cv_.notify_all();
    };
  }
  std::thread::id id() const { return thread_.get_id(); }
  // Returns once every job handed over so far has run.
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return jobs_.empty() && !running_; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [this] { return done_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
      lock.unlock();
      job();
      lock.lock();
      running_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

TEST_CASE("Constructor arguments are validated with messages naming them", "[timer]") {
  auto message_of = [](auto make) -> std::string {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no exception)";
  };
  CHECK_THAT(message_of([] { HashedWheelTimer t(0ms); }), Catch::Contains("tick"));
  CHECK_THAT(message_of([] { HashedWheelTimer t(-5ms); }), Catch::Contains("tick"));
  CHECK_THAT(message_of([] { HashedWheelTimer t(10ms, 0); }), Catch::Contains("ticks_per_wheel"));
  CHECK_THAT(message_of([] { HashedWheelTimer t(10ms, (1 << 30) + 1); }),
             Catch::Contains("ticks_per_wheel"));
  CHECK_THAT(message_of([] { HashedWheelTimer t(10ms, 512, -1); }), Catch::Contains("max_pending"));

  HashedWheelTimer defaults;
  CHECK(defaults.tick() == 100ms);
  CHECK(defaults.ticks_per_wheel() == 512);
  CHECK(defaults.max_pending() == 0);
  CHECK(dynamic_cast<heartwheel::SteadyTimerClock*>(&defaults.clock()) != nullptr);
  CHECK(HashedWheelTimer(10ms, 500).ticks_per_wheel() == 512);
  CHECK(HashedWheelTimer(10ms, 1).ticks_per_wheel() == 1);
  CHECK(HashedWheelTimer(10ms, 1 << 30).ticks_per_wheel() == 1 << 30);

  const auto clock = std::make_shared<VirtualClock>();
  HashedWheelTimer::Options options;
  options.tick = 7ms;
  options.ticks_per_wheel = 3;
  options.max_pending = 9;
  options.clock = clock;
  HashedWheelTimer from_options(options);
  CHECK(from_options.tick() == 7ms);
  CHECK(from_options.ticks_per_wheel() == 4);
  CHECK(from_options.max_pending() == 9);
  CHECK(&from_options.clock() == clock.get());

  HashedWheelTimer timer(10ms);
  timer.start();
  timer.start();  // idempotent
  CHECK_THROWS_AS(timer.new_timeout(Timeout::Task{}, 1s), std::invalid_argument);
  CHECK_THROWS_AS(timer.new_periodic([](Timeout&) {}, 1s, 0s), std::invalid_argument);
}

TEST_CASE("A 2 s timeout has run within 3 s and is expired, a 10 s one has not and is not",
          "[timer][seeds]") {
  // The clock, and everything a task touches, is declared before the timer,
  // so it outlives the worker (the timer's destructor joins it). Same below.
  const auto clock = std::make_shared<VirtualClock>();
  Duration short_ran_at{-1};
  Duration long_ran_at{-1};
  HashedWheelTimer timer(on(clock));  // Netty's defaults: 100 ms tick, 512 ticks
  auto long_one = timer.new_timeout([&](Timeout&) { long_ran_at = at(*clock); }, 10s);
  auto short_one = timer.new_timeout([&](Timeout&) { short_ran_at = at(*clock); }, 2s);
  CHECK(timer.pending_timeouts() == 2);

  clock->advance(3s);
  CHECK(short_one->is_expired());
  CHECK_FALSE(short_one->is_cancelled());
  CHECK(short_ran_at == 2s);  // on its tick: never early, not late
  CHECK(long_ran_at == Duration(-1));
  CHECK_FALSE(long_one->is_expired());
  CHECK(timer.pending_timeouts() == 1);

  clock->advance(7s);
  CHECK(long_ran_at == 10s);
  CHECK(long_one->is_expired());
  CHECK(timer.pending_timeouts() == 0);
}

TEST_CASE("stop() after every short timeout ran returns nothing", "[timer][seeds]") {
  const auto clock = std::make_shared<VirtualClock>();
  int ran = 0;
  HashedWheelTimer timer(on(clock, 10ms));
  for (int i = 1; i <= 5; ++i)
    timer.new_timeout([&](Timeout&) { ++ran; }, i * 10ms);  // handles dropped: still run
  clock->advance(40ms);
  CHECK(ran == 4);
  clock->advance(10ms);
  CHECK(ran == 5);
  CHECK(timer.pending_timeouts() == 0);
  CHECK(timer.stop().empty());
}

TEST_CASE("stop() returns the pending timeouts, without the cancelled ones", "[timer][seeds]") {
  const auto clock = std::make_shared<VirtualClock>();
  int ran = 0;
  HashedWheelTimer timer(on(clock));
  std::vector<std::shared_ptr<Timeout>> mine;
  for (int i = 0; i < 5; ++i) mine.push_back(timer.new_timeout([&](Timeout&) { ++ran; }, 5s));
  auto cancelled = timer.new_timeout([&](Timeout&) { ++ran; }, 5s);
  CHECK(cancelled->cancel());
  clock->advance(4900ms);

  auto left = timer.stop();
  CHECK(left.size() == 5);
  for (const auto& t : left) {
    CHECK_FALSE(t->is_expired());
    CHECK_FALSE(t->is_cancelled());
    CHECK(std::find(mine.begin(), mine.end(), t) != mine.end());
  }
  clock->advance(1s);  // nothing sleeps on the clock any more
  CHECK(ran == 0);
  CHECK(timer.pending_timeouts() == 0);
  CHECK(timer.stop().empty());  // a second stop() has nothing left
}

TEST_CASE("new_timeout() and start() after stop() throw std::logic_error", "[timer][seeds]") {
  const auto clock = std::make_shared<VirtualClock>();
  HashedWheelTimer timer(on(clock, 10ms));
  timer.new_timeout([](Timeout&) {}, 1ms);
  timer.stop();
  CHECK_THROWS_AS(timer.new_timeout([](Timeout&) {}, 1ms), std::logic_error);
  CHECK_THROWS_AS(timer.start(), std::logic_error);

  HashedWheelTimer never_started(on(clock, 10ms));
  CHECK(never_started.stop().empty());
  CHECK_THROWS_AS(never_started.new_timeout([](Timeout&) {}, 1ms), std::logic_error);
}

TEST_CASE("stop() from inside a task throws std::logic_error and the timer keeps working",
          "[timer][seeds]") {
  const auto clock = std::make_shared<VirtualClock>();
  int outcome = 0;  // 1: logic_error, 2: returned, 3: other exception
  bool later = false;
  HashedWheelTimer timer(on(clock, 10ms));
  timer.new_timeout(
      [&](Timeout& self) {
        try {
          self.timer().stop();
          outcome = 2;
        } catch (const std::logic_error&) {
          outcome = 1;
        } catch (...) {
          outcome = 3;
        }
      },
      1ms);
  clock->advance(10ms);
  CHECK(outcome == 1);
  timer.new_timeout([&](Timeout&) { later = true; }, 1ms);
  clock->advance(10ms);
  CHECK(later);
}

TEST_CASE("A task that reschedules itself every 1 s on a 32-slot 100 ms wheel runs 3 times in 3.5 s",
          "[timer][seeds]") {
  const auto clock = std::make_shared<VirtualClock>();
  std::vector<Duration> runs;
  Timeout::Task task;
  HashedWheelTimer timer(on(clock, 100ms, 32));
  task = [&](Timeout& self) {
    runs.push_back(at(*clock));
    self.timer().new_timeout(task, 1s);
  };
  timer.new_timeout(task, 1s);
  clock->advance(3500ms);
  CHECK(runs == std::vector<Duration>{1s, 2s, 3s});
  timer.stop();
}

TEST_CASE("100000 timeouts of 125 ms on a 200 ms tick fire after 125 ms and before 2 x (200 + 125) ms",
          "[timer][seeds]") {
  constexpr std::size_t kCount = 100'000;
  const auto clock = std::make_shared<VirtualClock>();
  std::vector<Duration> submitted(kCount);
  std::vector<Duration> fired(kCount, Duration(-1));
  HashedWheelTimer timer(on(clock, 200ms));
  // Submitted in 8 batches 25 ms apart, so deadlines fall at different
  // places between tick boundaries.
  for (std::size_t i = 0; i < kCount; ++i) {
    if (i % (kCount / 8) == 0 && i > 0) clock->advance(25ms);
    submitted[i] = at(*clock);
    timer.new_timeout([&fired, &clock = *clock, i](Timeout&) { fired[i] = at(clock); }, 125ms);
  }
  clock->advance(1s);
  std::size_t early = 0;
  std::size_t late = 0;
  std::size_t off_tick = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    const Duration took = fired[i] - submitted[i];
    if (took < 125ms) ++early;
    if (took >= 2 * (200ms + 125ms)) ++late;
    // Exactly at the first tick boundary at or after the deadline.
    const Duration due = submitted[i] + 125ms;
    if (fired[i] != (due + 200ms - Duration(1)) / 200ms * 200ms) ++off_tick;
  }
  CHECK(early == 0);
  CHECK(late == 0);
  CHECK(off_tick == 0);
  CHECK(timer.pending_timeouts() == 0);
}

TEST_CASE("Tasks due on the same tick run in the order they reached the wheel", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  std::vector<int> order;
  HashedWheelTimer timer(on(clock, 100ms));
  // The first half waits in the wheel's level 1 and cascades to the tick's
  // slot; the second half reaches that slot directly, 100 ms later.
  for (int i = 0; i < 500; ++i)
    timer.new_timeout([&order, i](Timeout&) { order.push_back(i); }, 10s);
  clock->advance(9s);
  for (int i = 500; i < 1000; ++i)
    timer.new_timeout([&order, i](Timeout&) { order.push_back(i); }, 1s);
  clock->advance(1s);
  REQUIRE(order.size() == 1000);
  CHECK(std::is_sorted(order.begin(), order.end()));
}

TEST_CASE("Over max_pending new_timeout() throws RejectedExecution, and cancel() frees a place",
          "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  auto options = on(clock, 10ms);
  options.max_pending = 2;
  HashedWheelTimer timer(options);
  auto a = timer.new_timeout([](Timeout&) {}, 1h);
  auto b = timer.new_timeout([](Timeout&) {}, 1h);
  CHECK(timer.pending_timeouts() == 2);
  try {
    timer.new_timeout([](Timeout&) {}, 1h);
    FAIL("no RejectedExecution");
  } catch (const heartwheel::RejectedExecution& e) {
    CHECK_THAT(e.what(), Catch::Contains("max_pending is 2"));
  }
  static_assert(std::is_base_of_v<std::runtime_error, heartwheel::RejectedExecution>);
  CHECK(timer.pending_timeouts() == 2);
  CHECK(a->cancel());
  CHECK(timer.pending_timeouts() == 1);
  CHECK_NOTHROW(timer.new_timeout([](Timeout&) {}, 1h));
  CHECK_THROWS_AS(timer.new_periodic([](Timeout&) {}, 1h, 1h), heartwheel::RejectedExecution);
}

TEST_CASE("cancel() is true once, false after a second cancel or after the task ran", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  bool cancelled_ran = false;
  bool other_ran = false;
  HashedWheelTimer timer(on(clock, 10ms));
  auto t = timer.new_timeout([&](Timeout&) { cancelled_ran = true; }, 20ms);
  auto other = timer.new_timeout([&](Timeout&) { other_ran = true; }, 20ms);
  CHECK(t->cancel());
  CHECK(t->is_cancelled());
  CHECK_FALSE(t->is_expired());
  CHECK_FALSE(t->cancel());
  CHECK(timer.pending_timeouts() == 1);

  clock->advance(20ms);
  CHECK(other_ran);
  CHECK_FALSE(cancelled_ran);
  CHECK(other->is_expired());
  CHECK_FALSE(other->cancel());
  CHECK_FALSE(other->is_cancelled());
  CHECK(&other->timer() == &timer);
  CHECK(other->period() == Duration::zero());
  CHECK(timer.pending_timeouts() == 0);
}

TEST_CASE("A throwing task is logged on stderr and the worker carries on", "[timer]") {
  CerrCapture capture;
  {
    const auto clock = std::make_shared<VirtualClock>();
    bool after = false;
    HashedWheelTimer timer(on(clock, 10ms));
    timer.new_timeout([](Timeout&) { throw std::runtime_error("boom in a task"); }, 1ms);
    timer.new_timeout([](Timeout&) { throw 42; }, 2ms);
    timer.new_timeout([&](Timeout&) { after = true; }, 30ms);
    clock->advance(30ms);
    CHECK(after);
    CHECK(timer.failed_tasks() == 2);
    timer.stop();
  }
  CHECK_THAT(capture.text(), Catch::Contains("boom in a task"));
  CHECK_THAT(capture.text(), Catch::Contains("non-standard exception"));
}

TEST_CASE("The expire-all switch runs every pending timeout now and new ones at once, off restores deadlines",
          "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  int ran = 0;
  int periodic_runs = 0;
  bool sentinel = false;
  HashedWheelTimer timer(on(clock, 10ms));
  for (int i = 0; i < 3; ++i) timer.new_timeout([&](Timeout&) { ++ran; }, 1h);
  CHECK_FALSE(timer.expire_all());
  timer.set_expire_all(true);
  CHECK(timer.expire_all());
  clock->advance(0ms);  // the worker caught up with the switch: no time passed
  CHECK(ran == 3);
  auto now_one = timer.new_timeout([&](Timeout&) { ++ran; }, 1h);
  clock->advance(0ms);
  CHECK(ran == 4);
  CHECK(now_one->is_expired());

  // A periodic series runs when picked up, then once per tick (10 ms).
  auto series = timer.new_periodic([&](Timeout&) { ++periodic_runs; }, 1h, 1h);
  clock->advance(30ms);
  CHECK(periodic_runs == 4);

  timer.set_expire_all(false);
  clock->advance(0ms);
  auto later = timer.new_timeout([&](Timeout&) { ++ran; }, 1h);
  timer.new_timeout([&](Timeout&) { sentinel = true; }, 30ms);
  clock->advance(30ms);
  CHECK(sentinel);
  CHECK(ran == 4);
  CHECK_FALSE(later->is_expired());
  CHECK(periodic_runs == 4);             // back on its 1 h period
  CHECK(timer.pending_timeouts() == 2);  // `later` and the series
  CHECK(series->cancel());
}

TEST_CASE("A periodic task runs at its period until cancelled, also from inside itself", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  std::vector<Duration> outer_at;
  int inner_runs = 0;
  bool inner_cancel_failed = false;
  HashedWheelTimer timer(on(clock, 5ms));
  auto series = timer.new_periodic([&](Timeout&) { outer_at.push_back(at(*clock)); }, 10ms, 20ms);
  CHECK(series->period() == 20ms);
  timer.new_periodic(
      [&](Timeout& self) {
        if (++inner_runs < 3) return;
        if (!self.cancel()) inner_cancel_failed = true;
      },
      1ms, 5ms);

  clock->advance(90ms);
  CHECK(outer_at ==
        std::vector<Duration>{10ms, 30ms, 50ms, 70ms, 90ms});  // fixed rate, never early
  CHECK(inner_runs == 3);
  CHECK_FALSE(inner_cancel_failed);
  CHECK_FALSE(series->is_expired());
  CHECK(timer.pending_timeouts() == 1);  // the outer series; the inner one cancelled itself
  CHECK(series->cancel());
  CHECK_FALSE(series->cancel());
  CHECK(timer.pending_timeouts() == 0);

  clock->advance(100ms);  // five periods later
  CHECK(outer_at.size() == 5);
  CHECK(inner_runs == 3);
}

TEST_CASE("A periodic series skips the runs it missed instead of bunching them", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  std::vector<Duration> runs;
  HashedWheelTimer timer(on(clock, 10ms));
  timer.new_periodic(
      [&](Timeout&) {
        runs.push_back(at(*clock));
        // A task that takes 35 ms: the clock moves under it.
        if (runs.size() == 1) clock->advance(35ms);
      },
      10ms, 10ms);
  clock->advance(80ms);
  // Ran at 10 ms until 45 ms; 20, 30 and 40 ms were missed; then 50, 60, ...
  CHECK(runs == std::vector<Duration>{10ms, 50ms, 60ms, 70ms, 80ms});
}

TEST_CASE("stop() hands back a live periodic series", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  int runs = 0;
  HashedWheelTimer timer(on(clock, 5ms));
  auto series = timer.new_periodic([&](Timeout&) { ++runs; }, 1ms, 10ms);
  clock->advance(15ms);  // runs at 5 and 15 ms
  CHECK(runs == 2);
  auto left = timer.stop();
  REQUIRE(left.size() == 1);
  CHECK(left[0] == series);
  CHECK(series->cancel());  // the handle outlives the worker; cancel() only flips the state
  clock->advance(30ms);
  CHECK(runs == 2);
}

TEST_CASE("With an executor, tasks run on the executor's thread", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  std::atomic<int> on_pool{0};
  std::atomic<int> elsewhere{0};
  SerialExecutor pool;  // destroyed after the timer, before the counters its jobs touch
  auto options = on(clock, 10ms);
  options.executor = pool.executor();
  HashedWheelTimer timer(options);
  const auto pool_id = pool.id();
  auto record = [&](Timeout&) { (std::this_thread::get_id() == pool_id ? on_pool : elsewhere)++; };
  timer.new_timeout(record, 1ms);                       // 10 ms
  timer.new_timeout(record, 20ms);                      // 20 ms
  auto series = timer.new_periodic(record, 5ms, 10ms);  // 10, 20, 30, 40, 50 ms
  clock->advance(50ms);                                 // all handed over...
  pool.wait_idle();                                     // ... and run
  CHECK(on_pool.load() == 7);
  series->cancel();
  timer.stop();
  CHECK(elsewhere.load() == 0);
}

TEST_CASE("Four threads submitting and cancelling at once: every timeout fires or is cancelled exactly once",
          "[timer][threads]") {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5'000;
  constexpr int kTotal = kThreads * kPerThread;
  const auto clock = std::make_shared<VirtualClock>();
  std::vector<std::atomic<int>> fired(kTotal);
  std::vector<std::atomic<int>> cancelled(kTotal);
  HashedWheelTimer timer(on(clock, 1ms));
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < kPerThread; ++i) {
        const int id = th * kPerThread + i;
        auto t = timer.new_timeout([&fired, id](Timeout&) { ++fired[static_cast<std::size_t>(id)]; },
                                   std::chrono::milliseconds(i % 20));
        if (i % 3 == 0 && t->cancel()) ++cancelled[static_cast<std::size_t>(id)];
      }
    });
  }
  for (auto& t : threads) t.join();
  clock->advance(20ms);  // every deadline has passed
  CHECK(timer.pending_timeouts() == 0);
  clock->advance(40ms);  // time for anything that would fire twice
  int wrong = 0;
  for (int i = 0; i < kTotal; ++i)
    if (fired[static_cast<std::size_t>(i)].load() + cancelled[static_cast<std::size_t>(i)].load() != 1) ++wrong;
  CHECK(wrong == 0);
  CHECK(timer.stop().empty());
}

TEST_CASE("A burst of submissions delays a due timeout by at most 100000 transfers", "[timer]") {
  // The worker is held inside a task while the burst is queued; a timeout
  // already in the wheel falls due meanwhile (the task moves the clock). With
  // the per-tick transfer bound it runs after the first 100,000 burst
  // entries, not after all.
  constexpr int kBurst = 130'000;
  const auto clock = std::make_shared<VirtualClock>();
  std::mutex gate;
  std::unique_lock<std::mutex> hold(gate);
  std::atomic<bool> blocked{false};
  int burst_ran = 0;
  int burst_before_due = -1;
  HashedWheelTimer timer(on(clock, 1ms));
  struct Release {  // a failed REQUIRE must not leave the worker blocked in the join
    std::unique_lock<std::mutex>& lock;
    ~Release() {
      if (lock.owns_lock()) lock.unlock();
    }
  } release{hold};
  timer.new_timeout([&](Timeout&) { burst_before_due = burst_ran; }, 50ms);
  timer.new_timeout(
      [&](Timeout&) {
        clock->advance(59ms);  // from the worker: the clock does not wait for it
        blocked = true;
        std::lock_guard<std::mutex> wait_here(gate);
      },
      1ms);
  // Another thread moves time to 1 ms; its advance() returns once the worker
  // has gone back to sleep, i.e. after the test released it.
  std::thread mover([&] { clock->advance(1ms); });
  struct Join {
    std::thread& t;
    ~Join() { t.join(); }
  };
  {
    Join join_mover{mover};
    REQUIRE(eventually([&] { return blocked.load(); }));
    for (int i = 0; i < kBurst; ++i)
      timer.new_timeout([&](Timeout&) { ++burst_ran; }, -1h);  // due now
    hold.unlock();
  }
  CHECK(at(*clock) == 60ms);
  CHECK(burst_ran == kBurst);
  CHECK(burst_before_due == static_cast<int>(HashedWheelTimer::kMaxTransfersPerTick));
}

TEST_CASE("An idle timer does not tick", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  bool ran = false;
  HashedWheelTimer timer(on(clock, 1ms));
  timer.new_timeout([&](Timeout&) { ran = true; }, 1ms);
  auto far = timer.new_timeout([](Timeout&) {}, 1h);
  clock->advance(1ms);
  CHECK(ran);
  const auto before = timer.wakeups();
  clock->advance(300ms);  // 300 ticks of 1 ms
  CHECK(timer.wakeups() == before);
  CHECK(far->cancel());
}

TEST_CASE("Submissions due after the worker's planned wake-up do not wake it", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  bool ran = false;
  bool soon = false;
  HashedWheelTimer timer(on(clock, 10ms));
  timer.new_timeout([&](Timeout&) { ran = true; }, 1ms);
  timer.new_timeout([](Timeout&) {}, 1h);  // the worker then sleeps until it cascades (43 min)
  clock->advance(10ms);
  CHECK(ran);
  const auto before = timer.wakeups();
  std::vector<std::shared_ptr<Timeout>> later;
  for (int i = 0; i < 1000; ++i) later.push_back(timer.new_timeout([](Timeout&) {}, 2h));
  clock->advance(0ms);
  CHECK(timer.wakeups() == before);  // not one per submission: none at all
  CHECK(timer.pending_timeouts() == 1001);
  // An earlier deadline does wake it.
  timer.new_timeout([&](Timeout&) { soon = true; }, 10ms);
  clock->advance(10ms);
  CHECK(soon);
  CHECK(timer.stop().size() == 1001);
}

TEST_CASE("Far-off submissions and cancels wake a sleeping worker after 4096 pushes", "[timer]") {
  // Their deadlines are after the worker's planned wake-up, so none wakes it
  // by itself; without the push count the queues would grow until then.
  constexpr int kTimeouts = 10'000;  // 20,000 pushes: submit + cancel
  const auto clock = std::make_shared<VirtualClock>();
  bool ran = false;
  HashedWheelTimer timer(on(clock, 10ms));
  timer.new_timeout([&](Timeout&) { ran = true; }, 1ms);
  auto far = timer.new_timeout([](Timeout&) {}, 1h);
  clock->advance(10ms);  // asleep until the 1 h entry cascades (43 min)
  CHECK(ran);
  const auto before = timer.wakeups();
  std::weak_ptr<Timeout> first_cancelled;
  for (int i = 0; i < kTimeouts; ++i) {
    auto t = timer.new_timeout([](Timeout&) {}, 2h);
    t->cancel();
    if (i == 0) first_cancelled = t;
  }
  clock->advance(0ms);
  // The first batch is drained and its cancelled timeouts released. (How
  // many wake-ups that took depends on how the threads interleave: a worker
  // that wakes late drains several batches at once.)
  CHECK(first_cancelled.expired());
  const auto woken = timer.wakeups() - before;
  CHECK(woken >= 1);
  CHECK(woken <= 2 * kTimeouts / HashedWheelTimer::kPushesPerWake + 4);
  CHECK(timer.pending_timeouts() == 1);
  CHECK(far->cancel());
}

TEST_CASE("Two timers on one virtual clock each run on their own ticks", "[timer][clock]") {
  const auto clock = std::make_shared<VirtualClock>();
  std::vector<Duration> a_runs;
  std::vector<Duration> b_runs;
  HashedWheelTimer a(on(clock, 30ms));
  HashedWheelTimer b(on(clock, 20ms));
  a.new_periodic([&](Timeout&) { a_runs.push_back(at(*clock)); }, 30ms, 30ms);
  b.new_periodic([&](Timeout&) { b_runs.push_back(at(*clock)); }, 20ms, 20ms);
  clock->advance(100ms);
  CHECK(a_runs == std::vector<Duration>{30ms, 60ms, 90ms});
  CHECK(b_runs == std::vector<Duration>{20ms, 40ms, 60ms, 80ms, 100ms});
  CHECK_THROWS_AS(clock->advance(-1ms), std::invalid_argument);
}

TEST_CASE("Creating too many timers prints one warning", "[timer]") {
  CerrCapture capture;
  std::vector<std::unique_ptr<HashedWheelTimer>> timers;
  const int base = HashedWheelTimer::instance_count();
  for (int i = 0; i < HashedWheelTimer::kInstanceWarningThreshold + 3; ++i)
    timers.push_back(std::make_unique<HashedWheelTimer>());
  CHECK(HashedWheelTimer::instance_count() == base + HashedWheelTimer::kInstanceWarningThreshold + 3);
  const std::string text = capture.text();
  CHECK_THAT(text, Catch::Contains("more than 64"));
  CHECK(text.find("instances exist") == text.rfind("instances exist"));  // once
  timers.clear();
  CHECK(HashedWheelTimer::instance_count() == base);
}

TEST_CASE("A timer destroyed from its own task lets the worker finish", "[timer]") {
  const auto clock = std::make_shared<VirtualClock>();
  auto timer = std::make_unique<HashedWheelTimer>(on(clock, 10ms));
  bool destroyed = false;
  HashedWheelTimer* raw = timer.get();
  std::unique_ptr<HashedWheelTimer> owned_by_task = std::move(timer);
  auto* slot = &owned_by_task;
  const std::weak_ptr<Timeout> dropped = raw->new_timeout([](Timeout&) {}, 1h);
  raw->new_timeout(
      [slot, &destroyed](Timeout&) {
        slot->reset();
        destroyed = true;
      },
      1ms);
  clock->advance(10ms);  // returns once the worker has finished
  CHECK(destroyed);
  CHECK(HashedWheelTimer::instance_count() == 0);
  // The worker's final drain released what never ran (no leak, no cycle).
  CHECK(dropped.expired());
}

// The real steady clock: a one-shot timeout and a periodic series, with
// bounds generous enough for a loaded machine under ThreadSanitizer.
TEST_CASE("On the real clock, tasks run after their delay and periodic runs keep their period",
          "[timer][real-clock]") {
  std::atomic<std::int64_t> one_shot_after_ns{-1};
  std::atomic<int> periodic_runs{0};
  std::atomic<bool> periodic_early{false};
  HashedWheelTimer timer(5ms);
  const TimePoint start = Clock::now();
  auto far = timer.new_timeout([](Timeout&) {}, 1h);  // the worker sleeps with a far deadline
  timer.new_timeout([&](Timeout&) { one_shot_after_ns = (Clock::now() - start).count(); }, 50ms);
  auto series = timer.new_periodic(
      [&](Timeout&) {
        const int n = ++periodic_runs;  // run n is due at 20 ms * n
        if (Clock::now() - start < n * 20ms) periodic_early = true;
      },
      20ms, 20ms);
  REQUIRE(eventually([&] { return one_shot_after_ns.load() >= 0 && periodic_runs.load() >= 3; }));
  CHECK(one_shot_after_ns.load() >= Duration(50ms).count());  // never early
  CHECK(one_shot_after_ns.load() < Duration(5s).count());
  CHECK_FALSE(periodic_early.load());
  CHECK(series->cancel());
  CHECK(far->cancel());
  CHECK(timer.stop().empty());
}
