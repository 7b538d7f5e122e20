// Several loop threads, each with its own hub on one Bus (label `threads`:
// also run under ThreadSanitizer). Every worker and an outside thread publish
// to one channel at once; every subscriber on every worker checks that the
// offsets it sees go up by exactly one, with no gap and no reordering, also
// across unsubscribe / resubscribe-with-recovery while the others publish.
#include <atomic>
#include <catch2/catch.hpp>
#include <latch>
#include <memory>
#include <thread>

#include "pubsub_support.h"

using namespace pubsub_test;

namespace {

// Counts every deviation from "offset = last + 1" in one epoch.
struct OrderChecker : Subscriber {
  DeliveryOutcome on_publication(const Publication& p, const Frame&) override {
    see(p);
    return DeliveryOutcome::delivered;
  }
  void see(const Publication& p) {
    if (p.epoch != epoch || p.offset != last + 1) ++errors;
    last = p.offset;
    ++received;
    for (const char ch : p.data)
      digest = (digest ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    digest = (digest ^ 0xff) * 1099511628211ULL;  // FNV-1a over the data in offset order
  }
  // A (re)subscribe: the first one sets the epoch; a later one must recover
  // everything missed and continue exactly where it stopped.
  void started(const SubscribeResult& r) {
    if (r.error) ++errors;
    if (epoch.empty()) {
      epoch = r.position.epoch;
      last = r.position.offset;
      return;
    }
    if (!r.recovered) ++errors;
    for (const auto& p : r.publications) see(*p);
    if (r.position.offset != last) ++errors;
  }

  std::string epoch;
  std::uint64_t last = 0;
  std::uint64_t received = 0;
  std::uint64_t errors = 0;
  std::uint64_t digest = 14695981039346656037ULL;
  bool churner = false;
};

constexpr int kWorkers = 3;
constexpr int kSubscribersPerWorker = 40;
constexpr int kPerPublisher = 2000;
constexpr std::uint64_t kTotal = (kWorkers + 1) * kPerPublisher;  // workers + one outside thread

struct Worker {
  std::vector<std::unique_ptr<OrderChecker>> checkers;
  HubStats stats;
  bool finished = false;
};

struct Tick {
  uv_timer_t timer;
  Hub* hub;
  Worker* worker;
  std::atomic<bool>* abort;
  int published = 0;
  unsigned ticks = 0;
};

void on_tick(uv_timer_t* t) {
  auto& k = *static_cast<Tick*>(t->data);
  for (int i = 0; i < 50 && k.published < kPerPublisher; ++i, ++k.published)
    k.hub->publish("room", "w" + std::to_string(k.published));
  bool done = k.published == kPerPublisher;
  const bool churn = ++k.ticks % 3 == 0;
  for (auto& c : k.worker->checkers) {
    // Churners leave and come back with their last position every third tick,
    // missing what is published meanwhile, until they have everything and
    // are subscribed.
    if (c->churner && churn && (c->last < kTotal || c->hub() == nullptr)) {
      if (c->hub() != nullptr) {
        k.hub->unsubscribe(*c, "room");
      } else {
        c->started(k.hub->subscribe(*c, "room", {StreamPosition{c->last, c->epoch}}));
      }
    }
    done = done && c->last == kTotal && c->hub() != nullptr;
  }
  if (done || k.abort->load()) {
    k.worker->finished = done;
    uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
  }
}

void run_worker(Bus& bus, Worker& w, std::latch& ready, std::atomic<bool>& abort) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    HubOptions o;
    o.loop = &loop;
    Hub hub(bus, o);
    for (int i = 0; i < kSubscribersPerWorker; ++i) {
      auto c = std::make_unique<OrderChecker>();
      c->churner = i % 8 == 0;
      c->started(hub.subscribe(*c, "room"));
      w.checkers.push_back(std::move(c));
    }
    ready.arrive_and_wait();  // everyone subscribed before anyone publishes
    Tick tick{};
    tick.hub = &hub;
    tick.worker = &w;
    tick.abort = &abort;
    uv_timer_init(&loop, &tick.timer);
    tick.timer.data = &tick;
    uv_timer_start(&tick.timer, on_tick, 1, 1);
    uv_run(&loop, UV_RUN_DEFAULT);  // ends when the tick timer closes
    w.stats = hub.stats();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}

}  // namespace

TEST_CASE("Publications from every worker reach subscribers on every worker, in one order",
          "[pubsub][threads]") {
  BusOptions o;
  o.channel = with_history(kTotal, 10min);  // long enough that every churner recovers
  Bus bus(o);
  std::latch ready(kWorkers + 1);
  std::atomic<bool> abort{false};
  std::vector<Worker> workers(kWorkers);
  std::vector<std::thread> threads;
  for (auto& w : workers)
    threads.emplace_back([&, wp = &w] { run_worker(bus, *wp, ready, abort); });
  std::atomic<int> publish_errors{0};
  std::thread outside([&] {  // no Catch assertions off the main thread
    ready.arrive_and_wait();
    for (int i = 0; i < kPerPublisher; ++i) {
      if (bus.publish("room", "o" + std::to_string(i)).error) ++publish_errors;
      if (i % 64 == 0) std::this_thread::yield();
    }
  });
  outside.join();
  // A watchdog: a lost publication must fail the test, not hang it.
  const auto deadline = Clock::now() + 120s;
  std::thread watchdog([&] {
    while (Clock::now() < deadline && !abort.load()) std::this_thread::sleep_for(10ms);
    abort = true;
  });
  for (auto& t : threads) t.join();
  abort = true;
  watchdog.join();

  CHECK(publish_errors == 0);
  HubStats total;
  total.hubs = 0;
  const std::uint64_t digest = workers[0].checkers[0]->digest;
  for (auto& w : workers) {
    CHECK(w.finished);
    for (auto& c : w.checkers) {
      CHECK(c->errors == 0);
      CHECK(c->last == kTotal);
      CHECK(c->digest == digest);  // the same publication at every offset, everywhere
      if (!c->churner) CHECK(c->received == kTotal);
    }
    total.merge(w.stats);
  }
  CHECK(total.hubs == kWorkers);
  CHECK(total.publications == kWorkers * kPerPublisher);
  CHECK(total.delivery.dropped == 0);
  CHECK(total.recovered > 0);  // churners did come back through recovery
  CHECK(total.not_recovered == 0);
  CHECK(bus.stats().publications == kTotal);
  // Batching: far fewer wake-ups than envelopes (each hub took every event).
  CHECK(total.wakeups < total.events);
  CHECK(bus.presence("room") == 0);  // every hub left on destruction
}

TEST_CASE("Presence counts subscribers on every worker thread", "[pubsub][threads][presence]") {
  Bus bus;
  constexpr int kPer = 25;
  std::latch subscribed(kWorkers);
  std::latch checked(kWorkers);
  std::vector<std::uint64_t> seen(kWorkers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWorkers; ++i) {
    threads.emplace_back([&, i] {
      Hub hub(bus);  // no loop needed: nothing is delivered here
      std::vector<std::unique_ptr<Recorder>> rs;
      for (int j = 0; j < kPer; ++j) {
        rs.push_back(std::make_unique<Recorder>());
        hub.subscribe(*rs.back(), "room");
      }
      subscribed.arrive_and_wait();
      seen[static_cast<std::size_t>(i)] = hub.presence("room");
      checked.arrive_and_wait();
      rs.clear();  // leave while the others still hold theirs
    });
  }
  for (auto& t : threads) t.join();
  for (auto n : seen) CHECK(n == kWorkers * kPer);
  CHECK(bus.presence("room") == 0);
  CHECK(bus.stats().channels == 0);
}
