// heap_map.h - the baseline: std::unordered_map + the 4-ary heap of
// tools/timer-bench (dary_heap.h), the obvious way to build an expiring map.
//
// Each entry is an unordered_map node {key, Slot}; its Slot holds the heap
// timer (its index in the heap), the value and its deadline. Expiry pops the
// heap's minimum and erases its key from the map.
//
// Two ways to push a deadline back on a get, both measured:
//   eager (heap4):      DaryHeap::schedule moves the timer to its new
//                       deadline at once (a sift-down, O(log n)): what
//                       timer-bench's heap does on a refresh.
//   lazy (heap4_lazy):  the get only stores the new deadline in the Slot;
//                       when the heap's old deadline comes, the entry is
//                       pushed again for the rest: the same trick the wheel
//                       map uses, so the rows compare the structures, not
//                       the idea.
// Single-threaded; time is passed in (ns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "dary_heap.h"

namespace heartwheel::bench {

class HeapMap {
 public:
  HeapMap(bool lazy, std::uint64_t expire_after_access_ns) : lazy_(lazy), access_ns_(expire_after_access_ns) {}
  ~HeapMap() { clear(); }
  HeapMap(const HeapMap&) = delete;
  HeapMap& operator=(const HeapMap&) = delete;

  void reserve(std::size_t n) {
    map_.reserve(n);
    heap_.reserve(n);
  }

  bool insert(std::uint64_t key, std::uint64_t value, std::uint64_t now, std::uint64_t ttl_ns) {
    auto [it, added] = map_.try_emplace(key);
    if (!added) return false;
    Slot& s = it->second;
    s.timer.callback = &on_expire;
    s.owner = this;
    s.key = key;
    s.value = value;
    s.deadline = now + ttl_ns;
    heap_.schedule(s.timer, s.deadline);
    return true;
  }

  // The value, its deadline pushed back to now + expire_after_access.
  std::uint64_t* get(std::uint64_t key, std::uint64_t now) {
    auto it = map_.find(key);
    if (it == map_.end() || it->second.deadline <= now) return nullptr;
    Slot& s = it->second;
    s.deadline = now + access_ns_;
    if (!lazy_) heap_.schedule(s.timer, s.deadline);
    return &s.value;
  }

  // Removes every entry due at `now`; returns how many.
  std::size_t expire(std::uint64_t now) {
    now_ = now;
    removed_ = 0;
    heap_.expire(now);
    return removed_;
  }

  std::size_t size() const noexcept { return map_.size(); }
  std::size_t bucket_count() const noexcept { return map_.bucket_count(); }
  std::size_t heap_capacity() const noexcept { return heap_.capacity(); }

  void clear() {
    for (auto& [k, s] : map_) heap_.cancel(s.timer);
    map_.clear();
  }

 private:
  struct Slot {
    HeapTimer timer;  // first: the heap's callback gets back to the Slot
    HeapMap* owner = nullptr;
    std::uint64_t key = 0;
    std::uint64_t value = 0;
    std::uint64_t deadline = 0;
  };

  static void on_expire(HeapTimer& t) {
    Slot& s = reinterpret_cast<Slot&>(t);
    HeapMap& m = *s.owner;
    if (s.deadline > m.now_) {  // lazy: a get moved it later
      m.heap_.schedule(s.timer, s.deadline);
      return;
    }
    ++m.removed_;
    m.map_.erase(s.key);
  }

  bool lazy_;
  std::uint64_t access_ns_;
  std::unordered_map<std::uint64_t, Slot> map_;
  DaryHeap heap_;
  std::uint64_t now_ = 0;
  std::size_t removed_ = 0;
};

}  // namespace heartwheel::bench
