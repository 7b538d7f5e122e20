// See heartwheel/metrics/shared_slots.h. The seqlock follows Boehm, "Can
// seqlocks get along with programming language memory models?" (2012), in
// its fence-free form (TSan does not support atomic_thread_fence): data
// words are atomics (no data race, so also clean under TSan within one
// process); the writer's data stores are releases, so a reader that sees
// any new word also sees the odd sequence stored before it; the reader's
// data loads are acquires, so its second look at the sequence comes after
// them. On x86 both are plain moves.
#include <heartwheel/metrics/shared_slots.h>
#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace heartwheel::metrics {

namespace {
using Ref = std::atomic_ref<std::uint64_t>;
constexpr std::size_t kWord = sizeof(std::uint64_t);
constexpr std::size_t kLineWords = 64 / kWord;
constexpr int kReadTries = 4096;         // with yields: about a millisecond against a dead writer
constexpr std::size_t kMaxWords = 1024;  // 8 KiB per slot is plenty for a snapshot
}  // namespace

SharedRegion::SharedRegion(std::size_t count, std::size_t bytes)
    : count_(count), bytes_(bytes), words_((bytes + kWord - 1) / kWord) {
  if (count == 0 || bytes == 0)
    throw std::invalid_argument("SharedRegion: count and bytes must be > 0");
  if (words_ > kMaxWords) throw std::invalid_argument("SharedRegion: slots hold at most 8 KiB");
  stride_ = (1 + words_ + kLineWords - 1) / kLineWords * kLineWords;
  mapped_ = count_ * stride_ * kWord;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::system_error(errno, std::generic_category(), "SharedRegion: mmap");
  base_ = static_cast<std::uint64_t*>(p);  // zero-filled: every sequence 0 = never stored
}

SharedRegion::~SharedRegion() { ::munmap(base_, mapped_); }

std::uint64_t* SharedRegion::slot(std::size_t index) const noexcept {
  return base_ + index * stride_;
}

void SharedRegion::store(std::size_t index, const void* data) noexcept {
  if (index >= count_) return;
  std::uint64_t buf[kMaxWords];
  buf[words_ - 1] = 0;  // the padding of a partial last word
  std::memcpy(buf, data, bytes_);
  std::uint64_t* s = slot(index);
  Ref seq(s[0]);
  // Odd while storing. (s | 1) + 2 is odd and new whether or not the last
  // writer (a process that died mid-store) left the sequence odd.
  const std::uint64_t begin = (seq.load(std::memory_order_relaxed) | 1) + 2;
  seq.store(begin, std::memory_order_relaxed);
  for (std::size_t i = 0; i < words_; ++i) Ref(s[1 + i]).store(buf[i], std::memory_order_release);
  seq.store(begin + 1, std::memory_order_release);
}

bool SharedRegion::load(std::size_t index, void* data) const noexcept {
  if (index >= count_) return false;
  std::uint64_t buf[kMaxWords];
  std::uint64_t* s = slot(index);
  Ref seq(s[0]);
  for (int attempt = 0; attempt < kReadTries; ++attempt) {
    const std::uint64_t before = seq.load(std::memory_order_acquire);
    if (before == 0) return false;  // never stored
    if ((before & 1) == 0) {
      for (std::size_t i = 0; i < words_; ++i)
        buf[i] = Ref(s[1 + i]).load(std::memory_order_acquire);
      if (seq.load(std::memory_order_relaxed) == before) {
        std::memcpy(data, buf, bytes_);
        return true;
      }
    }
    if (attempt >= 16) ::sched_yield();  // the writer may be descheduled mid-store
  }
  return false;
}

}  // namespace heartwheel::metrics
