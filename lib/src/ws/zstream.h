// zlib's raw DEFLATE streams as permessage-deflate uses them (RFC 7692 7.2):
// a message is deflated with Z_SYNC_FLUSH and its trailing 00 00 ff ff cut
// off; the receiver puts them back and inflates. The only file of the ws
// layer that includes zlib.h (deflate_pool.cpp and the session's compressed
// paths include this one), so that heartwheel/ws headers need no zlib.
//
// Windows are raw (negative windowBits). zlib deflates with at least 9 bits
// (a request for 8 becomes 9, zlib.h), so 8 is never asked of a Deflater; an
// Inflater of 9 bits or more reads a stream made with any smaller window.
//
// Threads: one stream, one thread (the loop's).
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace heartwheel::ws {
class DeflatePool;
}

namespace heartwheel::ws::detail {

// The bytes RFC 7692 7.2.1 has the sender cut off and the receiver append.
inline constexpr char kDeflateTail[4] = {0x00, 0x00, static_cast<char>(0xff),
                                         static_cast<char>(0xff)};

enum class InflateResult : std::uint8_t { ok, too_big, bad_data };

class Inflater {
 public:
  // Throws std::bad_alloc when zlib cannot allocate its state.
  explicit Inflater(int window_bits);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  using Result = InflateResult;
  // Inflates all of `in`, appending to `out`; `out` never grows past
  // `limit` bytes: output beyond it is too_big (what fitted is appended,
  // the rest dropped, the stream stops there). bad_data: `in` is not
  // DEFLATE (what it inflated to before the bad byte is appended).
  // The stream keeps its window for the next call (and the next message,
  // unless reset()). bad_data: `in` is not DEFLATE.
  Result inflate(std::string_view in, std::string& out, std::size_t limit);
  // Forgets the history: the next message starts a new stream. Keeps the
  // memory (the window stays allocated).
  void reset() noexcept;

  // The pool it was borrowed from (null: the connection's own).
  DeflatePool* pool = nullptr;

 private:
  z_stream z_{};
};

class Deflater {
 public:
  // Throws std::bad_alloc when zlib cannot allocate its state.
  Deflater(int level, int window_bits, int mem_level);
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // Appends `in` deflated, sync-flushed and without its 00 00 ff ff tail, to
  // `out`: one permessage-deflate payload. The stream keeps its history
  // (context takeover) until reset().
  void compress(std::string_view in, std::string& out);
  void reset() noexcept;
  int window_bits() const noexcept { return window_bits_; }

 private:
  z_stream z_{};
  int window_bits_;
};

}  // namespace heartwheel::ws::detail
