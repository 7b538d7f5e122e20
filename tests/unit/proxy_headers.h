// PROXY protocol headers packed by hand, for the parser's tests and the
// connection's PROXY stage tests.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace proxytest {

inline std::string hex_bytes(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// CRC32C bit by bit, deliberately not the library's table version.
inline std::uint32_t crc32c_bitwise(std::string_view s) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::string u16(std::size_t v) {
  return {static_cast<char>((v >> 8) & 0xFF), static_cast<char>(v & 0xFF)};
}
inline std::string u32(std::uint32_t v) { return u16(v >> 16) + u16(v & 0xFFFF); }
inline std::string tlv(int type, std::string_view value) {
  return std::string(1, static_cast<char>(type)) + u16(value.size()) + std::string(value);
}

inline const std::string kSignature = hex_bytes("0d0a0d0a000d0a515549540a");

// A v2 header packed by hand. With crc set, a CRC32C TLV is appended and
// filled in over the finished header.
struct V2 {
  int ver_cmd = 0x21;
  int fam = 0x11;
  std::string block;  // addresses + TLVs
  bool crc = false;
  std::string build() const {
    std::string body = block;
    if (crc) body += tlv(0x03, std::string(4, '\0'));
    std::string h =
        kSignature + static_cast<char>(ver_cmd) + static_cast<char>(fam) + u16(body.size()) + body;
    if (crc) h.replace(h.size() - 4, 4, u32(crc32c_bitwise(h)));
    return h;
  }
};

inline std::string ipv4_block(const char* src, const char* dst, int sport, int dport) {
  in_addr s{}, d{};
  REQUIRE(inet_pton(AF_INET, src, &s) == 1);
  REQUIRE(inet_pton(AF_INET, dst, &d) == 1);
  return std::string(reinterpret_cast<char*>(&s), 4) + std::string(reinterpret_cast<char*>(&d), 4) +
         u16(sport) + u16(dport);
}

inline std::string ipv6_block(const char* src, const char* dst, int sport, int dport) {
  in6_addr s{}, d{};
  REQUIRE(inet_pton(AF_INET6, src, &s) == 1);
  REQUIRE(inet_pton(AF_INET6, dst, &d) == 1);
  return std::string(reinterpret_cast<char*>(&s), 16) +
         std::string(reinterpret_cast<char*>(&d), 16) + u16(sport) + u16(dport);
}

inline std::string unix_block(std::string src, std::string dst) {
  src.resize(108, '\0');
  dst.resize(108, '\0');
  return src + dst;
}

}  // namespace proxytest
