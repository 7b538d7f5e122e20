// The Bus's process-wide caps (BusOptions::max_channels, max_history_bytes):
// what a stranger publishing to many channels can make the process hold,
// and the orphans freed early to make room at the channel cap.
#include <heartwheel/pubsub/bus.h>

#include <algorithm>
#include <queue>
#include <string>
#include <vector>

#include "bus_shard.h"

namespace heartwheel::pubsub {

// Live channels are those made minus those freed; two threads racing for the
// last slot may both get it (the cap is exact up to the number of threads).
bool Bus::take_channel_slot() noexcept {
  const std::uint64_t live =
      channels_made_.load(std::memory_order_relaxed) - freed_.load(std::memory_order_relaxed);
  if (live >= options_.max_channels) return false;
  channels_made_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The cap is reached: free the oldest orphan of the next shard (in turn)
// that has one. One shard lock at a time; a full turn finding none: false.
// An orphan is a channel nobody is subscribed to, kept only for recovery:
// losing it early costs a returning client a reload (recovered: false),
// where refusing the new channel would lock every other client out.
bool Bus::evict_orphan() {
  const std::size_t first = evict_cursor_.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < options_.shards; ++i) {
    Shard& shard = shards_[(first + i) & (options_.shards - 1)];
    std::lock_guard lock(shard.mu);
    if (!shard.free_oldest_orphan()) continue;
    freed_.fetch_add(1, std::memory_order_relaxed);
    channels_evicted_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

// Over budget: drop the oldest publications of the largest histories until
// 90% of the budget is left (so that a steady stream of publications pays
// for one pass over the channels per 10% of the budget, not per publication).
// One pass finds the largest histories (kCandidates of them), one shard lock
// at a time; then the largest is cut by one publication at a time, under its
// shard's lock only, until it is no larger than the next one. One thread
// evicts at a time; others publishing meanwhile go on (briefly over budget).
void Bus::evict_history() {
  if (evicting_.exchange(true)) return;
  constexpr std::size_t kCandidates = 64;
  const std::size_t target = options_.max_history_bytes - options_.max_history_bytes / 10;
  struct Big {
    std::size_t bytes;
    std::size_t shard;
    std::string name;
    bool operator<(const Big& o) const noexcept { return bytes < o.bytes; }
  };
  while (history_bytes_.load(std::memory_order_relaxed) > target) {
    std::vector<Big> top;  // a min-heap by bytes: the kCandidates largest seen
    auto smaller = [](const Big& a, const Big& b) { return b < a; };
    for (std::size_t i = 0; i < options_.shards; ++i) {
      std::lock_guard lock(shards_[i].mu);
      for (const auto& [name, ch] : shards_[i].channels) {
        const std::size_t bytes = ch->history.held_bytes();
        if (bytes == 0) continue;
        if (top.size() < kCandidates) {
          top.push_back({bytes, i, name});
          std::push_heap(top.begin(), top.end(), smaller);
        } else if (top.front().bytes < bytes) {
          std::pop_heap(top.begin(), top.end(), smaller);
          top.back() = {bytes, i, name};
          std::push_heap(top.begin(), top.end(), smaller);
        }
      }
    }
    if (top.empty()) break;  // nothing left to drop (the counter can only be late)
    std::priority_queue<Big> largest(std::less<Big>(), std::move(top));
    while (!largest.empty() && history_bytes_.load(std::memory_order_relaxed) > target) {
      Big big = largest.top();
      largest.pop();
      const std::size_t next = largest.empty() ? 0 : largest.top().bytes;
      Shard& shard = shards_[big.shard];
      std::lock_guard lock(shard.mu);
      detail::StoredChannel* ch = shard.find(big.name);
      if (ch == nullptr) continue;
      while (!ch->history.empty() && ch->history.held_bytes() >= next &&
             history_bytes_.load(std::memory_order_relaxed) > target) {
        ch->history.pop_front();
        history_evictions_.fetch_add(1, std::memory_order_relaxed);
      }
      // Emptied with nobody subscribed: sweep() frees it.
      if (!ch->history.empty()) largest.push({ch->history.held_bytes(), big.shard, big.name});
    }
  }
  evicting_.store(false);
}

}  // namespace heartwheel::pubsub
