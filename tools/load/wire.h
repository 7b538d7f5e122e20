// tools/load/wire.h - bytes on the wire for the three modes.
//
// Every message the harness sends carries two big-endian u64 stamps in its
// first 16 bytes: the intended send time (the schedule's, wrk2-style) and the
// actual write time, both uv_hrtime() nanoseconds. An echo server returns them
// untouched; an RPC server echoes the request payload in its RESPONSE. So the
// harness keeps no per-message state: RTT and latency come back with the data.
//
// RPC frames (see docs of heartwheel-rpc-server):
//   length:u32be | type:u8 | id:u64be | payload[length - 9]
#pragma once

#include <cstddef>
#include <cstdint>

namespace heartwheel::load::wire {

inline constexpr std::size_t kStampBytes = 16;
inline constexpr std::size_t kRpcHeaderBytes = 13;
inline constexpr std::uint32_t kRpcMaxFrame = 1u << 20;  // same default as the server

enum class FrameType : std::uint8_t { request = 1, response = 2, ping = 3, pong = 4, error = 5 };

inline void put_u64(std::uint8_t* p, std::uint64_t v) noexcept {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}
inline std::uint64_t get_u64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}
inline void put_u32(std::uint8_t* p, std::uint32_t v) noexcept {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}
inline std::uint32_t get_u32(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

// Writes the 13-byte header of a frame whose payload has `payload` bytes.
inline void put_rpc_header(std::uint8_t* p, FrameType type, std::uint64_t id,
                           std::size_t payload) noexcept {
  put_u32(p, static_cast<std::uint32_t>(payload + 9));
  p[4] = static_cast<std::uint8_t>(type);
  put_u64(p + 5, id);
}

inline void put_stamps(std::uint8_t* p, std::uint64_t intended_ns,
                       std::uint64_t actual_ns) noexcept {
  put_u64(p, intended_ns);
  put_u64(p + 8, actual_ns);
}

}  // namespace heartwheel::load::wire
