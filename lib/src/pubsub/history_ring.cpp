// See history_ring.h.
#include "history_ring.h"

#include <algorithm>
#include <utility>

namespace heartwheel::pubsub::detail {

void HistoryRing::grow(std::size_t capacity) {
  const std::size_t n = std::min(capacity, std::max<std::size_t>(4, slots_.size() * 2));
  std::vector<PublicationPtr> bigger(n);
  for (std::size_t i = 0; i < size_; ++i)
    bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
  slots_ = std::move(bigger);
  head_ = 0;
}

namespace {
std::size_t bytes_of(const PublicationPtr& p) noexcept { return p->data.size() + p->info.size(); }
}  // namespace

void HistoryRing::added(const PublicationPtr& p) noexcept {
  bytes_ += bytes_of(p);
  if (total_ != nullptr) total_->fetch_add(bytes_of(p), std::memory_order_relaxed);
}

void HistoryRing::removed(const PublicationPtr& p) noexcept {
  bytes_ -= bytes_of(p);
  if (total_ != nullptr) total_->fetch_sub(bytes_of(p), std::memory_order_relaxed);
}

void HistoryRing::push(PublicationPtr publication, std::size_t capacity) {
  if (size_ == slots_.size() && slots_.size() < capacity) grow(capacity);
  added(publication);
  if (size_ == slots_.size()) {  // full at capacity: the newest replaces the oldest
    removed(slots_[head_]);
    slots_[head_] = std::move(publication);
    head_ = (head_ + 1) % slots_.size();
    return;
  }
  slots_[(head_ + size_) % slots_.size()] = std::move(publication);
  ++size_;
}

void HistoryRing::pop_front() noexcept {
  removed(slots_[head_]);
  slots_[head_].reset();
  head_ = (head_ + 1) % slots_.size();
  if (--size_ == 0) {
    // Give the memory back: an idle channel's ring should not stay large.
    std::vector<PublicationPtr>().swap(slots_);
    head_ = 0;
  }
}

void HistoryRing::trim(TimePoint now, Duration ttl) noexcept {
  while (size_ > 0 && front()->time + ttl <= now) pop_front();
}

bool HistoryRing::collect(std::uint64_t after, std::uint64_t upto,
                          std::vector<PublicationPtr>& out) const {
  if (after == upto) return true;
  if (after > upto || size_ == 0) return false;
  const std::uint64_t first = front()->offset;
  if (after + 1 < first || upto > back()->offset) return false;
  for (std::uint64_t o = after + 1; o <= upto; ++o) out.push_back((*this)[o - first]);
  return true;
}

void HistoryRing::latest(std::size_t limit, std::vector<PublicationPtr>& out) const {
  const std::size_t n = std::min(limit, size_);
  for (std::size_t i = size_ - n; i < size_; ++i) out.push_back((*this)[i]);
}

}  // namespace heartwheel::pubsub::detail
