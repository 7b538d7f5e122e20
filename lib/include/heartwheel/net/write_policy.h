// heartwheel/net/write_policy.h - how much a connection may queue for a slow
// peer, and what happens when the peer stops reading.
//
// Queued bytes = bytes accepted by Connection::write that the kernel has not
// taken yet. Above high_watermark the connection becomes unwritable
// (Handler::on_writable(false)); at or below low_watermark it is writable
// again (on_writable(true)). Producers that respect writability never hit the
// hard cap; bytes refused by the cap are counted (bytes_dropped) and the write
// returns errc::limit_reached. Bytes still queued when a connection closes are
// counted as dropped too: bytes are never lost silently.
//
// A peer that stops reading:
//   slow_reader == pause_reading: while unwritable, the connection stops
//     reading from that peer (request/response protocols then stop producing).
//   slow_reader == close: reading continues; only the stall rules below apply.
//   stall_timeout: bytes queued and not one written for this long ->
//     close(write_stall). Applies under both policies. 0 = off.
//   min_write_rate: while bytes stay queued for a whole rate_window, fewer than
//     min_write_rate * rate_window bytes written -> close(write_stall). Catches
//     readers that take one byte at a time. 0 = off.
// Threads: plain values, any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include <heartwheel/common/time.h>

namespace heartwheel::net {

enum class SlowReaderPolicy : std::uint8_t { pause_reading, close };

struct WritePolicy {
  std::size_t high_watermark = std::size_t{1} << 20;     // 1 MiB
  std::size_t low_watermark = std::size_t{256} << 10;    // 256 KiB
  std::size_t max_queued_bytes = std::size_t{64} << 20;  // hard cap; 0 = none
  SlowReaderPolicy slow_reader = SlowReaderPolicy::pause_reading;
  Duration stall_timeout = std::chrono::seconds(30);
  std::uint64_t min_write_rate = 0;  // bytes per second
  Duration rate_window = std::chrono::seconds(10);

  // Throws std::invalid_argument: low > high, cap below high, negative or
  // zero window with a rate set.
  void validate() const;
};

}  // namespace heartwheel::net
