// The pieces of the PROXY protocol parser (heartwheel/net/proxy_protocol.h)
// that see whole headers: proxy_protocol.cpp collects the bytes and calls
// these once the header is complete. Private to the net layer.
#pragma once

#include <heartwheel/net/proxy_protocol.h>

#include <cstddef>
#include <string_view>
#include <system_error>

namespace heartwheel::net::detail {

inline constexpr std::string_view kProxyV1Prefix = "PROXY ";
inline constexpr unsigned char kProxyV2Signature[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                        0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

// True while `word` (the bytes after "PROXY ", possibly incomplete) can still
// become "TCP4 ", "TCP6 ", "UNKNOWN " or "UNKNOWN\r".
bool proxy_v1_word_plausible(std::string_view word) noexcept;

// Parses a complete v1 line without its CRLF, prefix and protocol word already
// checked byte by byte. Errors: v1_malformed, v1_bad_address, v1_bad_port.
std::error_code parse_proxy_v1(std::string_view line, ProxyHeader& out);

// Checks byte `index` (12, 13 or 15) of the v2 fixed part given the bytes
// before it; the other positions have nothing to check. Sets `total` (16 +
// length) at index 15. Errors: v2_unsupported_version, v2_bad_command,
// v2_bad_family, v2_too_long.
std::error_code check_proxy_v2_fixed(const unsigned char* fixed, std::size_t index,
                                     std::size_t& total) noexcept;

// Parses a complete v2 header of `size` bytes. The buffer is scratch: the
// CRC32C field is zeroed in place to verify it. Errors: v2_address_truncated,
// v2_tlv_truncated, v2_tlv_bad_length, v2_tlv_duplicate, v2_bad_crc.
std::error_code parse_proxy_v2(unsigned char* header, std::size_t size, ProxyHeader& out);

}  // namespace heartwheel::net::detail
