// Private: a channel's history, the latest publications in a ring.
//
// Offsets in the ring are consecutive (publications are appended in offset
// order and only the oldest are dropped), so the one with offset o sits at
// index o - front()->offset: recovery and history() index, never search.
// The slot array grows by doubling up to the channel's history_size, so a
// channel with two publications holds four slots, not history_size.
// Threads: none of its own; the bus uses it under the channel's shard lock.
#pragma once

#include <heartwheel/pubsub/event.h>
#include <heartwheel/common/time.h>

#include <atomic>
#include <cstddef>
#include <vector>

namespace heartwheel::pubsub::detail {

class HistoryRing {
 public:
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Index 0 is the oldest. Precondition: i < size().
  const PublicationPtr& operator[](std::size_t i) const noexcept {
    return slots_[(head_ + i) % slots_.size()];
  }
  const PublicationPtr& front() const noexcept { return (*this)[0]; }
  const PublicationPtr& back() const noexcept { return (*this)[size_ - 1]; }

  // Appends, dropping the oldest when `capacity` (> 0) is reached.
  void push(PublicationPtr publication, std::size_t capacity);
  void pop_front() noexcept;
  // Drops the publications published `ttl` or longer before `now`.
  void trim(TimePoint now, Duration ttl) noexcept;
  // Bytes of data and info held (kept up to date: O(1)).
  std::size_t payload_bytes() const noexcept { return bytes_; }
  // Also keep `*total` up to date with this ring's bytes (the bus's
  // process-wide history bytes); null: no total. Set while empty.
  void count_into(std::atomic<std::size_t>* total) noexcept { total_ = total; }

  // Appends to `out` the publications with offsets in (after, upto], oldest
  // first, and returns true, if the ring holds all of them (after == upto
  // needs none). False (out untouched) if any is gone or after > upto.
  bool collect(std::uint64_t after, std::uint64_t upto, std::vector<PublicationPtr>& out) const;
  // Appends the latest min(limit, size()) publications, oldest first.
  void latest(std::size_t limit, std::vector<PublicationPtr>& out) const;

 private:
  void grow(std::size_t capacity);

  std::vector<PublicationPtr> slots_;
  void added(const PublicationPtr& p) noexcept;
  void removed(const PublicationPtr& p) noexcept;

  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;
  std::atomic<std::size_t>* total_ = nullptr;
};

}  // namespace heartwheel::pubsub::detail
