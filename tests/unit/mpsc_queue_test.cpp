// The lock-free MPSC queue that feeds HashedWheelTimer's worker. Runs under
// ThreadSanitizer (label `threads`).
#include <heartwheel/common/detail/mpsc_queue.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

using heartwheel::detail::MpscNode;
using heartwheel::detail::MpscQueue;

namespace {

struct Item : MpscNode {
  int producer = 0;
  int seq = 0;
};

// One object in two queues at once, as Timeout is in the submit and cancel queues.
struct FirstHook : MpscNode {};
struct SecondHook : MpscNode {};
struct Both : FirstHook, SecondHook {
  int value = 0;
};

}  // namespace

TEST_CASE("The MPSC queue pops in FIFO order and reports empty correctly", "[mpsc]") {
  MpscQueue<Item> q;
  CHECK(q.empty());
  CHECK(q.pop() == nullptr);

  std::vector<Item> items(5);
  for (int i = 0; i < 5; ++i) {
    items[static_cast<std::size_t>(i)].seq = i;
    q.push(items[static_cast<std::size_t>(i)]);
    CHECK_FALSE(q.empty());
  }
  for (int i = 0; i < 3; ++i) {
    Item* it = q.pop();
    REQUIRE(it != nullptr);
    CHECK(it->seq == i);
  }
  // Interleave: push a popped item again behind the ones still queued.
  q.push(items[0]);
  CHECK(q.pop()->seq == 3);
  CHECK(q.pop()->seq == 4);
  CHECK_FALSE(q.empty());
  CHECK(q.pop() == &items[0]);
  CHECK(q.empty());
  CHECK(q.pop() == nullptr);

  // The last item is returned through the stub re-insertion path, repeatedly.
  for (int round = 0; round < 3; ++round) {
    q.push(items[1]);
    CHECK(q.pop() == &items[1]);
    CHECK(q.empty());
  }
}

TEST_CASE("One object can sit in two MPSC queues through two hooks", "[mpsc]") {
  MpscQueue<FirstHook> first;
  MpscQueue<SecondHook> second;
  Both a, b;
  a.value = 1;
  b.value = 2;
  first.push(a);
  second.push(b);
  second.push(a);
  first.push(b);
  CHECK(static_cast<Both*>(first.pop())->value == 1);
  CHECK(static_cast<Both*>(second.pop())->value == 2);
  CHECK(static_cast<Both*>(second.pop())->value == 1);
  CHECK(static_cast<Both*>(first.pop())->value == 2);
  CHECK(first.empty());
  CHECK(second.empty());
}

TEST_CASE("Four producers and one consumer lose nothing and keep each producer's order",
          "[mpsc][threads]") {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 50'000;
  MpscQueue<Item> q;
  std::vector<std::vector<Item>> items;
  items.reserve(kProducers);
  for (int p = 0; p < kProducers; ++p) items.emplace_back(kPerProducer);
  std::atomic<bool> go{false};

  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < kPerProducer; ++i) {
        Item& it = items[static_cast<std::size_t>(p)][static_cast<std::size_t>(i)];
        it.producer = p;
        it.seq = i;
        q.push(it);
      }
    });
  }
  go.store(true, std::memory_order_release);

  std::vector<int> next_seq(kProducers, 0);
  int received = 0;
  int out_of_order = 0;
  while (received < kProducers * kPerProducer) {
    Item* it = q.pop();
    if (it == nullptr) {
      // nullptr with a non-empty queue is the "producer mid-push" state.
      std::this_thread::yield();
      continue;
    }
    auto& expected = next_seq[static_cast<std::size_t>(it->producer)];
    if (it->seq != expected) ++out_of_order;
    expected = it->seq + 1;
    ++received;
  }
  for (auto& t : producers) t.join();

  CHECK(out_of_order == 0);
  for (int p = 0; p < kProducers; ++p) CHECK(next_seq[static_cast<std::size_t>(p)] == kPerProducer);
  CHECK(q.pop() == nullptr);
  CHECK(q.empty());
}
