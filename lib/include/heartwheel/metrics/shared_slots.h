// heartwheel/metrics/shared_slots.h - per-writer snapshot slots in memory
// shared by the processes of a pre-forked server.
//
// What it is
//   `count` slots, each holding one copy of a trivially copyable T (say a
//   net::LoopSnapshot), in an anonymous MAP_SHARED mapping made at
//   construction: every process forked afterwards sees the same slots. Each
//   slot has ONE writer at a time (one loop thread of one process) that
//   stores a new copy whenever it likes; any thread of any process loads a
//   consistent copy of any slot. A seqlock: the writer never waits for
//   readers, a reader retries while a store is under way.
//
// Why shared memory (the design the pre-forked echo server uses): every
// process can answer a scrape with the whole server's counters by reading
// the slots, so the parent stays the single-threaded supervisor that
// runtime::run_prefork requires (no endpoint thread there), no process waits for
// another, and a child restarted after a crash simply stores into its old
// slot again. The pipe to the parent would need the parent to serve, which
// it cannot without a thread of its own.
//
// Costs: store() and load() copy sizeof(T) bytes as 8-byte release stores /
// acquire loads (plain moves on x86; a ~1 KiB LoopSnapshot: well under a
// microsecond). Memory:
// count * (sizeof(T) + 8) bytes rounded up to 64 per slot, touched lazily.
//
// Failure: a writer killed in the middle of a store leaves its slot marked
// busy; load() then gives up after a bounded number of retries (about a
// millisecond) and reports the slot unreadable until the next store.
//
// Threads: store() for a slot from one thread at a time (any process);
//   load() from any thread of any process. Construct before fork(); each
//   process unmaps its own view when its copy is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace heartwheel::metrics {

// The untyped core: fixed-size byte slots.
class SharedRegion {
 public:
  // Throws std::invalid_argument for count == 0 or bytes == 0, and
  // std::system_error if mmap fails.
  SharedRegion(std::size_t count, std::size_t bytes_per_slot);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  std::size_t size() const noexcept { return count_; }
  // Copies bytes_per_slot bytes from `data` into slot `index` (< size()).
  void store(std::size_t index, const void* data) noexcept;
  // Copies slot `index` into `data`; false when the slot was never stored
  // or no consistent copy could be read (its writer died mid-store).
  bool load(std::size_t index, void* data) const noexcept;

 private:
  std::uint64_t* slot(std::size_t index) const noexcept;

  std::size_t count_;
  std::size_t bytes_;
  std::size_t words_;   // data words per slot
  std::size_t stride_;  // words per slot: sequence + data, padded to 64 bytes
  std::uint64_t* base_ = nullptr;
  std::size_t mapped_ = 0;
};

template <class T>
class SharedSlots {
  static_assert(std::is_trivially_copyable_v<T>, "SharedSlots: T must be trivially copyable");

 public:
  explicit SharedSlots(std::size_t count) : region_(count, sizeof(T)) {}
  std::size_t size() const noexcept { return region_.size(); }
  void store(std::size_t index, const T& value) noexcept { region_.store(index, &value); }
  std::optional<T> load(std::size_t index) const noexcept {
    T value;
    if (!region_.load(index, &value)) return std::nullopt;
    return value;
  }

 private:
  SharedRegion region_;
};

}  // namespace heartwheel::metrics
