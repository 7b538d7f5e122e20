// dary_heap.h - the heap baseline: an indexed 4-ary min-heap of deadlines.
//
// Why this heap: it is the strongest general-purpose heap timer we know of.
// The deadline lives in the heap array beside the timer pointer, so sifting
// compares keys without touching the timers; four children share one 64-byte
// cache line; each timer stores its own index, so cancel and reschedule are
// O(log n) in place (true decrease/increase-key, no stale nodes, bounded
// memory). Go's runtime timers use a 4-ary heap; asio an indexed binary one.
// std::priority_queue cannot cancel or reschedule without lazy deletion, which
// grows the heap with one stale node per refresh.
//
// Cost: push, update, remove, pop O(log4 n); no allocation once the array has
// grown to its peak size. Single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heartwheel::bench {

struct HeapTimer {
  static constexpr std::uint32_t kNone = UINT32_MAX;
  std::uint32_t index = kNone;  // position in the heap array, kNone if disarmed
  void (*callback)(HeapTimer&) = nullptr;
  bool armed() const noexcept { return index != kNone; }
};

class DaryHeap {
 public:
  struct Node {
    std::uint64_t deadline;
    HeapTimer* timer;
  };

  void reserve(std::size_t n) { nodes_.reserve(n); }
  std::size_t size() const noexcept { return nodes_.size(); }
  std::size_t capacity() const noexcept { return nodes_.capacity(); }

  // Arms or moves `t` to `deadline`.
  void schedule(HeapTimer& t, std::uint64_t deadline) {
    if (!t.armed()) {
      nodes_.push_back({deadline, &t});
      sift_up(nodes_.size() - 1);
      return;
    }
    const std::size_t i = t.index;
    const std::uint64_t old = nodes_[i].deadline;
    nodes_[i].deadline = deadline;
    if (deadline < old) sift_up(i);
    else sift_down(i);
  }

  bool cancel(HeapTimer& t) noexcept {
    if (!t.armed()) return false;
    remove_at(t.index);
    t.index = HeapTimer::kNone;
    return true;
  }

  // Runs the callbacks of every timer with deadline <= now, earliest first.
  std::size_t expire(std::uint64_t now) {
    std::size_t fired = 0;
    while (!nodes_.empty() && nodes_[0].deadline <= now) {
      HeapTimer* t = nodes_[0].timer;
      remove_at(0);
      t->index = HeapTimer::kNone;
      ++fired;
      t->callback(*t);
    }
    return fired;
  }

 private:
  static constexpr std::size_t kArity = 4;

  void place(std::size_t i, const Node& n) noexcept {
    nodes_[i] = n;
    n.timer->index = static_cast<std::uint32_t>(i);
  }

  void remove_at(std::size_t i) noexcept {
    const Node last = nodes_.back();
    nodes_.pop_back();
    if (i == nodes_.size()) return;
    place(i, last);
    if (i > 0 && last.deadline < nodes_[(i - 1) / kArity].deadline) sift_up(i);
    else sift_down(i);
  }

  void sift_up(std::size_t i) noexcept {
    const Node moving = nodes_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (nodes_[parent].deadline <= moving.deadline) break;
      place(i, nodes_[parent]);
      i = parent;
    }
    place(i, moving);
  }

  void sift_down(std::size_t i) noexcept {
    const Node moving = nodes_[i];
    const std::size_t n = nodes_.size();
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= n) break;
      const std::size_t last = first + kArity < n ? first + kArity : n;
      std::size_t best = first;
      for (std::size_t c = first + 1; c < last; ++c)
        if (nodes_[c].deadline < nodes_[best].deadline) best = c;
      if (nodes_[best].deadline >= moving.deadline) break;
      place(i, nodes_[best]);
      i = best;
    }
    place(i, moving);
  }

  std::vector<Node> nodes_;
};

}  // namespace heartwheel::bench
