// See history_ring.h.
#include "history_ring.h"

#include <algorithm>
#include <string>
#include <utility>

namespace heartwheel::pubsub::detail {

namespace {

// glibc's malloc: a chunk is the request plus its 8-byte header, rounded up
// to 16, and at least 32 bytes.
constexpr std::size_t chunk(std::size_t request) noexcept {
  return std::max<std::size_t>(32, (request + 8 + 15) & ~std::size_t{15});
}

// The heap block behind `s`, or 0 while it fits in its inline buffer (the
// data pointer then points into the string object itself).
std::size_t heap_bytes(const std::string& s) noexcept {
  const auto* object = reinterpret_cast<const char*>(&s);
  const char* data = s.data();
  if (data >= object && data < object + sizeof s) return 0;
  return chunk(s.capacity() + 1);
}

}  // namespace

std::size_t publication_bytes(const Publication& p) noexcept {
  // make_shared: one block, the object after the control block's vtable
  // pointer and two counts.
  std::size_t n = chunk(sizeof(Publication) + sizeof(void*) + 2 * sizeof(int));
  n += heap_bytes(p.channel) + heap_bytes(p.epoch) + heap_bytes(p.data) + heap_bytes(p.info);
  if (p.frame) n += chunk(sizeof(std::string) + 2 * sizeof(void*)) + heap_bytes(*p.frame);
  return n;
}

std::size_t HistoryRing::slots_bytes() const noexcept {
  return slots_.empty() ? 0 : chunk(slots_.size() * sizeof(PublicationPtr));
}

void HistoryRing::count(std::size_t bytes) noexcept {
  bytes_ += bytes;
  if (total_ != nullptr) total_->fetch_add(bytes, std::memory_order_relaxed);
}

void HistoryRing::uncount(std::size_t bytes) noexcept {
  bytes_ -= bytes;
  if (total_ != nullptr) total_->fetch_sub(bytes, std::memory_order_relaxed);
}

void HistoryRing::grow(std::size_t capacity) {
  const std::size_t n = std::min(capacity, std::max<std::size_t>(4, slots_.size() * 2));
  std::vector<PublicationPtr> bigger(n);
  for (std::size_t i = 0; i < size_; ++i)
    bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
  uncount(slots_bytes());
  slots_ = std::move(bigger);
  count(slots_bytes());
  head_ = 0;
}

void HistoryRing::push(PublicationPtr publication, std::size_t capacity) {
  if (size_ == slots_.size() && slots_.size() < capacity) grow(capacity);
  count(publication_bytes(*publication));
  if (size_ == slots_.size()) {  // full at capacity: the newest replaces the oldest
    uncount(publication_bytes(*slots_[head_]));
    slots_[head_] = std::move(publication);
    head_ = (head_ + 1) % slots_.size();
    return;
  }
  slots_[(head_ + size_) % slots_.size()] = std::move(publication);
  ++size_;
}

void HistoryRing::pop_front() noexcept {
  uncount(publication_bytes(*slots_[head_]));
  slots_[head_].reset();
  head_ = (head_ + 1) % slots_.size();
  if (--size_ == 0) {
    // Give the memory back: an idle channel's ring should not stay large.
    uncount(slots_bytes());
    std::vector<PublicationPtr>().swap(slots_);
    head_ = 0;
  }
}

void HistoryRing::clear() noexcept {
  while (size_ > 0) pop_front();
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
