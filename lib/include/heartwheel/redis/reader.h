// heartwheel/redis/reader.h - the incremental RESP2 reply reader, without I/O.
//
// What it is
//   Glue around hiredis's redisReader (libhiredis 0.14; only its parser is
//   used, never its connections): feed() whatever the socket delivered (part
//   of a reply, several replies, both), then take complete replies with
//   next() until it returns false. Replies are built straight into
//   redis::Reply values (hiredis's object callbacks), so there is no
//   redisReply tree to copy. hiredis stays out of this header.
//
// Limits and errors (sticky: after one, feed() and next() do nothing)
//   - A reply whose RESP bytes exceed `max_reply_bytes` (counted from its
//     first byte, also while it is still incomplete) fails with
//     errc::frame_too_large: a peer announcing a 4 GiB bulk string costs at
//     most that much buffering. The check depends only on the bytes, never on
//     how they were split into feeds (the fuzz target checks this).
//   - Bytes that are not RESP2 fail with errc::protocol_error;
//     error_message() has hiredis's text ("Protocol error, got \"x\" as reply
//     type byte"). hiredis 0.14 also refuses arrays nested deeper than 7.
//   - Running out of memory while building a reply fails with
//     std::errc::not_enough_memory.
//   However the bytes are split into feeds, the replies taken before a
//   failure are the same, and so is whether it fails; when one reply is both
//   too large and malformed, which of the two errors is reported can depend on
//   the split.
//   Memory: hiredis's buffer holds the unconsumed bytes (and keeps up to
//   16 KiB of spare room); a reply costs its bytes plus ~72 bytes per node, so
//   an array of tiny elements can take up to ~18x its RESP size.
//
// Cost: one copy of every byte into hiredis's buffer, one of each string
//   into its Reply; O(1) per node.
// Threads: one reader per connection and thread. Not copyable; movable.
#pragma once

#include <heartwheel/redis/reply.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <system_error>

namespace heartwheel::redis {

inline constexpr std::size_t kDefaultMaxReplyBytes = std::size_t{64} << 20;  // 64 MiB

class ReplyReader {
 public:
  // Throws std::bad_alloc if hiredis cannot allocate its reader.
  explicit ReplyReader(std::size_t max_reply_bytes = kDefaultMaxReplyBytes);
  ~ReplyReader();
  ReplyReader(ReplyReader&&) noexcept;
  ReplyReader& operator=(ReplyReader&&) noexcept;

  // Appends `bytes`. Returns the reader's error (also an earlier one).
  std::error_code feed(std::string_view bytes);
  // Moves the next complete reply into `out` and returns true; false when the
  // bytes so far hold no complete reply, or the reader failed (error()).
  bool next(Reply& out);

  std::error_code error() const noexcept { return error_; }
  // hiredis's description of a protocol error; empty otherwise.
  std::string_view error_message() const noexcept;
  // Bytes fed that no complete reply has consumed yet.
  std::size_t buffered() const noexcept { return static_cast<std::size_t>(fed_ - reply_start_); }
  std::size_t max_reply_bytes() const noexcept { return max_; }
  // Replies taken so far.
  std::uint64_t replies() const noexcept { return replies_; }

  // Forgets everything (bytes, partial reply, error): a new connection.
  void reset();

 private:
  void fail(std::error_code ec);
  std::uint64_t consumed() const noexcept;

  struct Hiredis;
  std::unique_ptr<Hiredis> r_;
  std::size_t max_;
  std::uint64_t fed_ = 0;          // bytes fed in total
  std::uint64_t reply_start_ = 0;  // where the reply being read starts, in bytes fed
  std::uint64_t replies_ = 0;
  std::error_code error_;
};

}  // namespace heartwheel::redis
