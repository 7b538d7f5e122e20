// heartwheel/metrics/worker_board.h - the latest copy of each worker's own
// counters, merged for a reader on another thread (a metrics endpoint, a
// stats file writer).
//
// What it is
//   One slot per worker loop, each holding a copy of that loop's counters
//   (http::SessionStats, rpc::NetHandlerStats, a protocol's own: any T with
//   `void merge(const T&)` and a default state that merges as zero). Each
//   loop publishes its copy from its own thread, typically from
//   runtime::WorkersOptions::on_publish; total() merges the slots. The counters
//   themselves stay plain integers on their loop (no atomics on the I/O
//   path): only the copy crosses threads, under this board's mutex.
//
// Threads: publish() and total() from any thread. Cost: one lock and one
//   copy of T per publish; total() copies and merges every slot.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace heartwheel::metrics {

template <class T>
class WorkerBoard {
 public:
  explicit WorkerBoard(std::size_t workers) : slots_(workers) {}

  // Replaces worker `index`'s copy (index < size(); others are ignored).
  void publish(std::size_t index, const T& value) {
    std::lock_guard lock(mutex_);
    if (index < slots_.size()) slots_[index] = value;
  }
  // Every worker's latest copy, merged.
  T total() const {
    std::lock_guard lock(mutex_);
    T sum{};
    for (const T& s : slots_) sum.merge(s);
    return sum;
  }
  std::size_t size() const noexcept { return slots_.size(); }

 private:
  mutable std::mutex mutex_;
  std::vector<T> slots_;
};

}  // namespace heartwheel::metrics
