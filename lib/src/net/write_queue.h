// The bytes a connection accepted and the kernel has not taken yet, as a list
// of segments (private to lib/src/net; used by connection_write.cpp).
//
// A segment is either bytes the connection owns (Connection::write copied them
// in; consecutive copies share one segment, so a burst of small writes stays
// one buffer) or a reference to a shared, immutable buffer
// (Connection::write(SharedBytes)): the buffer lives as long as the segment
// holds it and is never copied, so N connections queueing one publication
// hold N references to one buffer. A partial uv_try_write of a shared buffer
// leaves a reference with an offset, not a copy of the rest.
#pragma once

#include <heartwheel/net/connection.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace heartwheel::net::detail {

struct WriteSegment {
  std::string owned;       // used when `shared` is null
  SharedBytes shared;      // a reference: never copied
  std::size_t offset = 0;  // bytes of *shared already taken by the kernel

  std::string_view bytes() const noexcept {
    return shared ? std::string_view(*shared).substr(offset) : std::string_view(owned);
  }
};

class SegmentList {
 public:
  void append_copy(std::string_view bytes) {
    if (bytes.empty()) return;
    if (segments_.empty() || segments_.back().shared) segments_.emplace_back();
    segments_.back().owned.append(bytes);
    bytes_ += bytes.size();
  }
  // Queues `buffer` from `offset` on, by reference.
  void append_shared(SharedBytes buffer, std::size_t offset) {
    const std::size_t n = buffer->size() - offset;
    if (n == 0) return;
    WriteSegment& s = segments_.emplace_back();
    s.shared = std::move(buffer);
    s.offset = offset;
    bytes_ += n;
  }
  // Drops every segment (releasing shared buffers); keeps the vector's memory.
  void clear() noexcept {
    segments_.clear();
    bytes_ = 0;
  }
  void swap(SegmentList& other) noexcept {
    segments_.swap(other.segments_);
    std::swap(bytes_, other.bytes_);
  }
  bool empty() const noexcept { return bytes_ == 0; }
  std::size_t bytes() const noexcept { return bytes_; }
  const std::vector<WriteSegment>& segments() const noexcept { return segments_; }

 private:
  std::vector<WriteSegment> segments_;
  std::size_t bytes_ = 0;
};

}  // namespace heartwheel::net::detail

namespace heartwheel::net {

// Exists only while bytes are queued, so idle connections do not pay for the
// 192-byte uv_write_t and the segment lists.
struct Connection::WriteQueue {
  uv_write_t req{};
  detail::SegmentList inflight;  // handed to uv_write (one writev of every segment)
  detail::SegmentList pending;   // appended by write() while inflight is out
  bool writing = false;
  std::uint64_t progress_mark = 0;  // bytes_written() at the last check
  TimePoint last_progress{};
  TimePoint window_start{};
  std::uint64_t window_mark = 0;  // bytes_written() at window_start
};

}  // namespace heartwheel::net
