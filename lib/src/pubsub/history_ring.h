// Private: a channel's history, the latest publications in a ring.
//
// Offsets in the ring are consecutive (publications are appended in offset
// order and only the oldest are dropped), so the one with offset o sits at
// index o - front()->offset: recovery and history() index, never search.
// The slot array grows by doubling up to the channel's history_size, so a
// channel with two publications holds four slots, not history_size.
//
// Bytes held: what the ring keeps alive, counted as malloc holds it (issue
// 34: counting data and info only, a 1-byte publication to a 255-byte
// channel counted 36 bytes of the ~600 it held). Each publication: its
// shared block (the object and make_shared's counts), every string of it
// that left its inline buffer (data, info, its copy of the channel name,
// the epoch) as a glibc chunk, and the ring's slots. A publication's
// shared frame, when a broker set one, counts too. Publications are
// immutable once published, so a ring counts each on push and uncounts
// the same number on removal.
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
  // Drops every publication and the slots (their bytes leave the total).
  void clear() noexcept;
  // Drops the publications published `ttl` or longer before `now`.
  void trim(TimePoint now, Duration ttl) noexcept;
  // Memory held (see the top of this file; kept up to date: O(1)).
  std::size_t held_bytes() const noexcept { return bytes_; }
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
  void count(std::size_t bytes) noexcept;
  void uncount(std::size_t bytes) noexcept;
  std::size_t slots_bytes() const noexcept;

  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;
  std::atomic<std::size_t>* total_ = nullptr;
};

// What one publication keeps alive (see the top of this file), without
// its ring slot.
std::size_t publication_bytes(const Publication& p) noexcept;

}  // namespace heartwheel::pubsub::detail
