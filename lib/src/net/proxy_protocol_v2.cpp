// The PROXY protocol v2 binary header (spec section 2.2):
//   signature[12] | ver_cmd | fam | len:u16be | addresses | TLVs
// TLV := type:u8 | length:u16be | value[length]; PP2_TYPE_SSL's value is
//   client:u8 | verify:u32be | sub-TLVs.
//
// LOCAL (health checks): the spec says to discard the block after the fixed
// part, family included, and use the socket's addresses; HAProxy and Squid do
// exactly that, so the bytes after the 16 are skipped unparsed (no TLVs, no
// CRC check). PROXY with an unspecified family/transport half other than
// 0x00 (0x01, 0x02, 0x10, 0x20, 0x30) has no defined address layout: its
// block is skipped too and the socket's addresses apply.
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

#include "crc32c.h"
#include "proxy_protocol_detail.h"

namespace heartwheel::net::detail {

namespace {

constexpr std::size_t kInetBlock = 12;   // 2 x 4 address + 2 x 2 port
constexpr std::size_t kInet6Block = 36;  // 2 x 16 + 2 x 2
constexpr std::size_t kUnixBlock = 216;  // 2 x 108
constexpr std::size_t kUnixPath = 108;
constexpr std::size_t kTlvHeader = 3;
constexpr std::size_t kSslFixed = 5;  // client + verify

std::uint32_t be32(const unsigned char* p) noexcept {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

// Calls on_tlv(type, value) for each TLV that tiles `block`, in order; stops
// at the first error it or the framing reports.
template <typename OnTlv>
std::error_code for_each_tlv(const unsigned char* block, std::size_t size, OnTlv&& on_tlv) {
  std::size_t at = 0;
  while (at < size) {
    if (size - at < kTlvHeader) return ProxyError::v2_tlv_truncated;
    const std::uint8_t type = block[at];
    const std::size_t length = std::size_t{block[at + 1]} << 8 | block[at + 2];
    if (size - at - kTlvHeader < length) return ProxyError::v2_tlv_truncated;
    if (auto ec = on_tlv(type, block + at + kTlvHeader, length)) return ec;
    at += kTlvHeader + length;
  }
  return {};
}

std::string text(const unsigned char* p, std::size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n);
}

// Stores a typed TLV's value once; a second one is an error (which of two
// authorities would an access rule believe?).
std::error_code set_once(std::optional<std::string>& field, const unsigned char* p, std::size_t n) {
  if (field) return ProxyError::v2_tlv_duplicate;
  field = text(p, n);
  return {};
}

std::error_code parse_ssl(const unsigned char* p, std::size_t n, ProxySsl& ssl) {
  if (n < kSslFixed) return ProxyError::v2_tlv_bad_length;
  ssl.client = p[0];
  ssl.verify = be32(p + 1);
  return for_each_tlv(p + kSslFixed, n - kSslFixed,
                      [&](std::uint8_t type, const unsigned char* v, std::size_t len) {
                        switch (static_cast<ProxyTlvType>(type)) {
                          case ProxyTlvType::ssl_version:
                            return set_once(ssl.version, v, len);
                          case ProxyTlvType::ssl_cn:
                            return set_once(ssl.cn, v, len);
                          case ProxyTlvType::ssl_cipher:
                            return set_once(ssl.cipher, v, len);
                          case ProxyTlvType::ssl_sig_alg:
                            return set_once(ssl.sig_alg, v, len);
                          case ProxyTlvType::ssl_key_alg:
                            return set_once(ssl.key_alg, v, len);
                          default:
                            ssl.other.push_back({type, text(v, len)});
                            return std::error_code();
                        }
                      });
}

// Decodes the address block of a PROXY header whose family byte is `fam`:
// sets `used` to its size (the TLVs start there), or `skip_rest` when the
// layout is not defined.
std::error_code parse_addresses(unsigned char fam, const unsigned char* block, std::size_t size,
                                ProxyHeader& out, std::size_t& used, bool& skip_rest) {
  used = 0;
  skip_rest = false;
  const unsigned family = fam >> 4;
  const unsigned transport = fam & 0x0Fu;
  if (fam == 0x00) return {};  // UNSPEC: no addresses; TLVs may follow (HAProxy sends them)
  if (family == 0 || transport == 0) {
    skip_rest = true;
    return {};
  }
  const std::size_t need = family == 1 ? kInetBlock : family == 2 ? kInet6Block : kUnixBlock;
  if (size < need) return ProxyError::v2_address_truncated;
  sockaddr_storage src{}, dst{};
  if (family == 1) {
    auto& s = reinterpret_cast<sockaddr_in&>(src);
    auto& d = reinterpret_cast<sockaddr_in&>(dst);
    s.sin_family = d.sin_family = AF_INET;
    std::memcpy(&s.sin_addr, block, 4);
    std::memcpy(&d.sin_addr, block + 4, 4);
    std::memcpy(&s.sin_port, block + 8, 2);  // both in network order already
    std::memcpy(&d.sin_port, block + 10, 2);
    out.family = AF_INET;
  } else if (family == 2) {
    auto& s = reinterpret_cast<sockaddr_in6&>(src);
    auto& d = reinterpret_cast<sockaddr_in6&>(dst);
    s.sin6_family = d.sin6_family = AF_INET6;
    std::memcpy(&s.sin6_addr, block, 16);
    std::memcpy(&d.sin6_addr, block + 16, 16);
    std::memcpy(&s.sin6_port, block + 32, 2);
    std::memcpy(&d.sin6_port, block + 34, 2);
    out.family = AF_INET6;
  } else {
    auto& s = reinterpret_cast<sockaddr_un&>(src);
    auto& d = reinterpret_cast<sockaddr_un&>(dst);
    static_assert(sizeof s.sun_path == kUnixPath);
    s.sun_family = d.sun_family = AF_UNIX;
    std::memcpy(s.sun_path, block, kUnixPath);
    std::memcpy(d.sun_path, block + kUnixPath, kUnixPath);
    out.family = AF_UNIX;
  }
  out.transport = transport == 1 ? ProxyTransport::stream : ProxyTransport::dgram;
  out.source = src;
  out.destination = dst;
  used = need;
  return {};
}

}  // namespace

std::error_code check_proxy_v2_fixed(const unsigned char* fixed, std::size_t index,
                                     std::size_t& total) noexcept {
  switch (index) {
    case 12:
      if ((fixed[12] >> 4) != 2) return ProxyError::v2_unsupported_version;
      if ((fixed[12] & 0x0Fu) > 1) return ProxyError::v2_bad_command;
      return {};
    case 13:
      if ((fixed[13] >> 4) > 3 || (fixed[13] & 0x0Fu) > 2) return ProxyError::v2_bad_family;
      return {};
    case 15:
      total = kProxyV2FixedBytes + (std::size_t{fixed[14]} << 8 | fixed[15]);
      if (total > kProxyMaxHeaderBytes) return ProxyError::v2_too_long;
      return {};
    default:
      return {};
  }
}

std::error_code parse_proxy_v2(unsigned char* header, std::size_t size, ProxyHeader& out) {
  out.version = 2;
  if ((header[12] & 0x0Fu) == 0) {
    out.command = ProxyCommand::local;
    return {};
  }
  out.command = ProxyCommand::proxy;
  unsigned char* block = header + kProxyV2FixedBytes;
  const std::size_t block_size = size - kProxyV2FixedBytes;
  std::size_t address_bytes = 0;
  bool skip_rest = false;
  if (auto ec = parse_addresses(header[13], block, block_size, out, address_bytes, skip_rest))
    return ec;
  if (skip_rest) return {};

  unsigned char* crc_field = nullptr;
  auto on_tlv = [&](std::uint8_t type, const unsigned char* v, std::size_t n) -> std::error_code {
    out.tlvs.push_back({type, text(v, n)});
    switch (static_cast<ProxyTlvType>(type)) {
      case ProxyTlvType::alpn:
        return set_once(out.alpn, v, n);
      case ProxyTlvType::authority:
        if (n > kProxyAuthorityMax) return ProxyError::v2_tlv_bad_length;
        return set_once(out.authority, v, n);
      case ProxyTlvType::crc32c:
        if (n != 4) return ProxyError::v2_tlv_bad_length;
        if (crc_field) return ProxyError::v2_tlv_duplicate;
        crc_field = header + (v - header);  // the same bytes, writable
        return {};
      case ProxyTlvType::unique_id:
        if (n > kProxyUniqueIdMax) return ProxyError::v2_tlv_bad_length;
        return set_once(out.unique_id, v, n);
      case ProxyTlvType::ssl:
        if (out.ssl) return ProxyError::v2_tlv_duplicate;
        return parse_ssl(v, n, out.ssl.emplace());
      case ProxyTlvType::netns:
        return set_once(out.netns, v, n);
      default:
        return {};  // NOOP, sub-types out of place, custom: kept raw in tlvs only
    }
  };
  if (auto ec = for_each_tlv(block + address_bytes, block_size - address_bytes, on_tlv)) return ec;

  if (crc_field) {
    // Spec 2.2.3: CRC32C of the whole header with the checksum field zeroed.
    const std::uint32_t sent = be32(crc_field);
    std::memset(crc_field, 0, 4);
    if (crc32c(header, size) != sent) return ProxyError::v2_bad_crc;
    out.crc32c = sent;
  }
  return {};
}

}  // namespace heartwheel::net::detail
