// Counters crossing threads and processes for a scrape: SharedSlots (the
// seqlock in memory shared by pre-forked processes) and WorkerBoard (the
// per-worker copies under a mutex). Also run under TSan (label threads).
#include <heartwheel/http/session_stats.h>
#include <heartwheel/metrics/shared_slots.h>
#include <heartwheel/metrics/worker_board.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace metrics = heartwheel::metrics;

namespace {

// Every word equal when consistent: a torn copy mixes two stores.
struct Block {
  std::array<std::uint64_t, 97> words{};  // an odd size: not a multiple of the 64-byte line
  std::uint32_t tail = 0;                 // and a partial last word
};

Block block_of(std::uint64_t k) {
  Block b;
  b.words.fill(k);
  b.tail = static_cast<std::uint32_t>(k);
  return b;
}

bool consistent(const Block& b) {
  for (auto w : b.words)
    if (w != b.words[0]) return false;
  return b.tail == static_cast<std::uint32_t>(b.words[0]);
}

}  // namespace

TEST_CASE("A shared slot loads nothing until stored, then its latest copy", "[metrics][shared]") {
  metrics::SharedSlots<Block> slots(3);
  CHECK(slots.size() == 3);
  CHECK_FALSE(slots.load(0));
  CHECK_FALSE(slots.load(3));  // out of range
  slots.store(1, block_of(5));
  slots.store(1, block_of(6));
  auto b = slots.load(1);
  REQUIRE(b);
  CHECK(consistent(*b));
  CHECK(b->words[0] == 6);
  CHECK_FALSE(slots.load(2));
  CHECK_THROWS_AS(metrics::SharedSlots<Block>(0), std::invalid_argument);
}

TEST_CASE("Readers never see a torn copy while a writer keeps storing", "[metrics][shared]") {
  metrics::SharedSlots<Block> slots(2);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t k = 1; !stop.load(std::memory_order_relaxed); ++k)
      slots.store(0, block_of(k));
  });
  std::uint64_t last = 0;
  int loaded = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < end) {
    if (auto b = slots.load(0)) {
      ++loaded;
      REQUIRE(consistent(*b));
      REQUIRE(b->words[0] >= last);  // one writer: copies never go back in time
      last = b->words[0];
    }
  }
  stop = true;
  writer.join();
  CHECK(loaded > 0);
  CHECK(last > 1);
}

TEST_CASE("Processes forked after the slots were made share them both ways", "[metrics][shared]") {
  metrics::SharedSlots<Block> slots(2);
  slots.store(0, block_of(41));  // the parent's, before the fork
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto seen = slots.load(0);
    const bool ok = seen && seen->words[0] == 41;
    slots.store(1, block_of(42));  // the child's slot
    ::_exit(ok ? 0 : 3);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // the child saw the parent's copy
  auto b = slots.load(1);
  REQUIRE(b);
  CHECK(consistent(*b));
  CHECK(b->words[0] == 42);  // the parent sees the child's
}

TEST_CASE("A worker board merges the latest copy each worker published", "[metrics][board]") {
  metrics::WorkerBoard<heartwheel::http::SessionStats> board(3);
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < 3; ++w) {
    threads.emplace_back([&board, w] {
      heartwheel::http::SessionStats s;
      for (int i = 1; i <= 100; ++i) {
        s.requests = static_cast<std::uint64_t>(i) * (w + 1);
        board.publish(w, s);
      }
    });
  }
  for (auto& t : threads) t.join();
  board.publish(7, {});  // out of range: ignored
  CHECK(board.size() == 3);
  CHECK(board.total().requests == 100 + 200 + 300);
}
