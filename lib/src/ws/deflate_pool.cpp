// A loop's zlib streams and its compressed shared frames. See
// heartwheel/ws/deflate_pool.h.
#include <heartwheel/common/error.h>
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/stats.h>

#include <algorithm>

#include "frame_view.h"
#include "zstream.h"

namespace heartwheel::ws {

DeflatePool::DeflatePool(const DeflateOptions& options, Stats* stats)
    : options_(options), stats_(stats) {
  options_.validate();
  if (stats_ == nullptr) {
    own_stats_ = std::make_unique<Stats>();
    stats_ = own_stats_.get();
  }
}

DeflatePool::~DeflatePool() = default;

detail::Inflater* DeflatePool::borrow_inflater() {
  detail::Inflater* inflater = nullptr;
  if (idle_count_ > 0) {
    inflater = idle_[--idle_count_].release();
  } else {
    // Any window: 15 bits read what a peer made with fewer.
    inflater = new detail::Inflater(15);
    inflater->pool = this;
  }
  ++lent_;
  return inflater;
}

void DeflatePool::give_back(detail::Inflater* inflater) noexcept {
  --lent_;
  if (idle_count_ == kIdleInflaters) {
    delete inflater;
    return;
  }
  inflater->reset();
  idle_[idle_count_++].reset(inflater);
}

detail::Deflater& DeflatePool::deflater(int window_bits) {
  const int bits = std::clamp(window_bits, 9, 15);
  std::unique_ptr<detail::Deflater>& d = deflaters_[bits];
  // memLevel 8 (zlib's default): one stream per loop, so its memory is not
  // the concern its speed is.
  if (!d) d = std::make_unique<detail::Deflater>(options_.level, bits, 8);
  return *d;
}

void DeflatePool::compress(std::string_view payload, std::string& out, int window_bits) {
  detail::Deflater& d = deflater(window_bits);
  d.reset();  // every message on its own: no context
  d.compress(payload, out);
  ++stats_->deflate_calls;
}

std::error_code DeflatePool::decompress(std::string_view compressed, std::string& out,
                                        std::size_t max_bytes) {
  detail::Inflater* inflater = borrow_inflater();
  const std::size_t limit = out.size() + std::min(max_bytes, out.max_size() - out.size());
  auto result = inflater->inflate(compressed, out, limit);
  if (result == detail::Inflater::Result::ok)
    result = inflater->inflate(std::string_view(detail::kDeflateTail, 4), out, limit);
  give_back(inflater);
  if (result == detail::Inflater::Result::too_big) return make_error_code(errc::frame_too_large);
  if (result == detail::Inflater::Result::bad_data) return make_error_code(errc::protocol_error);
  return {};
}

SharedFrame DeflatePool::shared(const SharedFrame& frame, int window_bits) {
  if (!frame || window_bits < 9) return frame;
  return remember(frame, window_bits).result;
}

const DeflatePool::Remembered& DeflatePool::remember(const SharedFrame& frame, int window_bits) {
  for (const Remembered& r : remembered_)
    if (r.source == frame && r.window_bits == window_bits) return r;
  // Remembered whatever comes of it: the next subscribers of this
  // publication cost a comparison, not a parse (nor a deflate).
  Remembered& r = remembered_[next_remembered_];
  next_remembered_ = (next_remembered_ + 1) % kSharedFrames;
  r = {frame, frame, window_bits, 0, 0};
  const detail::DataFrame d = detail::data_frame(*frame);
  if (!d.ok) return r;
  if (d.payload.size() < options_.min_size) {
    ++stats_->compression_skipped_small;
    return r;
  }
  scratch_.clear();
  compress(d.payload, scratch_, window_bits);
  if (scratch_.size() >= d.payload.size()) {
    ++stats_->compression_skipped_incompressible;
    return r;
  }
  char head[kMaxFrameHeaderSize];
  const std::size_t n = write_frame_header(head, d.op, scratch_.size());
  head[0] = static_cast<char>(head[0] | kCompressedBit);
  auto compressed = std::make_shared<std::string>();
  compressed->reserve(n + scratch_.size());
  compressed->append(head, n).append(scratch_);
  r.result = std::move(compressed);
  r.uncompressed = d.payload.size();
  r.compressed = scratch_.size();
  return r;
}

}  // namespace heartwheel::ws
