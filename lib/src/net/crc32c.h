// CRC32C (Castagnoli, RFC 4960 appendix B), as the PROXY protocol v2 CRC32C
// TLV uses it. Private to the net layer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heartwheel::net::detail {

// The CRC32C of `size` bytes at `data` (initial value and final xor 0xFFFFFFFF:
// crc32c("123456789") == 0xE3069283). Table-driven, one byte per step; the
// PROXY header is at most 536 bytes, so nothing faster is needed.
std::uint32_t crc32c(const void* data, std::size_t size) noexcept;

}  // namespace heartwheel::net::detail
