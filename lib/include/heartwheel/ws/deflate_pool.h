// heartwheel/ws/deflate_pool.h - one event loop's zlib streams for
// permessage-deflate, lent to its WebSocket sessions one message at a time,
// and the compressed form of shared frames, made once per frame.
//
// What it is
//   Under the default, stateless policy (heartwheel/ws/deflate.h) no
//   connection owns zlib state: a session that receives a compressed
//   message borrows an inflate stream from its loop's pool at the message's
//   first frame and gives it back (reset) at its end; a message sent is
//   deflated by the pool's deflate stream for that window size in one call.
//   A shared frame (encode_shared: one publication for many subscribers)
//   is compressed once: shared(frame, bits) remembers the last few frames it
//   compressed, so the N subscribers of one publication that negotiated the
//   same window get one compressed frame, by reference (Stats::deflate_calls
//   counts the compressions; tests/unit/ws_deflate_test.cpp checks one per
//   publication). zlib stays inside the library: this header does not
//   include it.
//
// Ownership: one pool per loop, owned by the loop's ws::NetHandler (or a
//   test, or a client's loop), outliving every session that uses it
//   (Transport::deflate_pool). Shared frames it returns are immutable and
//   may outlive it.
// Cost: idle, at most kIdleInflaters inflate streams (~40 KiB each once
//   used: 32 KiB window + ~7 KiB state) and one deflate stream per window
//   size in use (~260 KiB at 15 bits, memLevel 8), made on first use; the
//   shared-frame memory holds kSharedFrames frames and their compressed
//   forms. compress: one zlib call per message (deflateReset, deflate);
//   shared: a pointer comparison per delivery after the first.
// Threads: the loop's thread only.
#pragma once

#include <heartwheel/ws/deflate.h>
#include <heartwheel/ws/frame.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::ws {

struct Stats;
class Session;
namespace detail {
class Inflater;
class Deflater;
}  // namespace detail

class DeflatePool {
 public:
  // Inflate streams kept for reuse; more borrowed at once are made and, on
  // return, freed.
  static constexpr std::size_t kIdleInflaters = 4;
  // Shared frames whose compressed form is remembered (the last ones).
  static constexpr std::size_t kSharedFrames = 4;

  // `stats` (may be null) gets the compression counters of everything done
  // through the pool and its sessions. Throws std::invalid_argument when
  // options.validate() does.
  explicit DeflatePool(const DeflateOptions& options, Stats* stats = nullptr);
  ~DeflatePool();
  DeflatePool(const DeflatePool&) = delete;
  DeflatePool& operator=(const DeflatePool&) = delete;

  const DeflateOptions& options() const noexcept { return options_; }

  // The frame a stateless peer with a window of `window_bits` (9..15) gets in
  // place of `frame` (one made by encode_shared: unmasked, FIN set): the
  // same message compressed, RSV1 set, made at the first call for this frame
  // and window and returned by reference after. `frame` itself when it is
  // not worth it: a control frame, a payload under options().min_size, a
  // compressed form no smaller, or a frame already compressed. Counts
  // deflate_calls (and compression_skipped), not the deliveries (the
  // session does).
  SharedFrame shared(const SharedFrame& frame, int window_bits);

  // One message's payload deflated for a stateless peer (RFC 7692 7.2.1:
  // sync-flushed, 00 00 ff ff cut off), appended to `out`, with the pool's
  // deflate stream for `window_bits` (9..15). Counts deflate_calls.
  void compress(std::string_view payload, std::string& out, int window_bits = 15);
  // The inverse, for a message compressed without context: appends the
  // inflated payload to `out`. Errors: errc::frame_too_large when it would
  // pass `max_bytes` (out then holds at most max_bytes), errc::protocol_error
  // when `compressed` is not DEFLATE.
  std::error_code decompress(std::string_view compressed, std::string& out, std::size_t max_bytes);

  // Inflate streams idle in the pool / lent to sessions now.
  std::size_t idle_inflaters() const noexcept { return idle_count_; }
  std::size_t lent_inflaters() const noexcept { return lent_; }

 private:
  friend class Session;
  struct Remembered {
    SharedFrame source;
    SharedFrame result;  // source itself when not compressed
    int window_bits = 0;
    std::size_t uncompressed = 0;  // payload bytes before and after; 0: not compressed
    std::size_t compressed = 0;
  };

  // For ws::Session (session_deflate.cpp): a stream for one message, and
  // its return (reset, kept or freed).
  detail::Inflater* borrow_inflater();
  void give_back(detail::Inflater* inflater) noexcept;
  detail::Deflater& deflater(int window_bits);
  // shared()'s entry for `frame` at `window_bits` (>= 9), made if new.
  const Remembered& remember(const SharedFrame& frame, int window_bits);
  Stats& stats() noexcept { return *stats_; }

  DeflateOptions options_;
  Stats* stats_;
  std::unique_ptr<Stats> own_stats_;  // when the owner gave none
  std::unique_ptr<detail::Inflater> idle_[kIdleInflaters];
  std::size_t idle_count_ = 0;
  std::size_t lent_ = 0;
  std::unique_ptr<detail::Deflater> deflaters_[16];  // by window bits, 9..15
  Remembered remembered_[kSharedFrames];
  std::size_t next_remembered_ = 0;
  std::string scratch_;  // what compress() made for a shared frame or a session's message
};

}  // namespace heartwheel::ws
