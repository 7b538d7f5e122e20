// heartwheel/net/proxy_protocol.h - the PROXY protocol header (v1 and v2) a
// load balancer such as HAProxy puts in front of every connection, parsed
// without I/O.
//
// What it is
//   ProxyHeaderParser reads the header that opens a connection accepted
//   behind a proxy (`send-proxy` / `send-proxy-v2` in HAProxy) and yields the
//   original client and server addresses and the v2 TLVs as a ProxyHeader.
//   Spec: /usr/share/doc/haproxy/proxy-protocol.txt.gz (Debian's haproxy).
//
// Rules it enforces (the spec's "never guess")
//   - A listener configured for the PROXY protocol expects it on EVERY
//     connection: the first byte must start "PROXY " (v1) or the 12-byte v2
//     signature, anything else is ProxyError::not_proxy_protocol. There is no
//     fallback to "no header".
//   - At most kProxyMaxHeaderBytes (536) bytes are ever read as header; a v1
//     line must end with CRLF within kProxyV1MaxLine (107) bytes.
//   - The parser never consumes a byte past the header: feed() says how many
//     bytes of the input were header, the rest belongs to the application
//     protocol (an HTTP request that came in the same segment, say).
//   - Strict v1 syntax: single spaces, "TCP4"/"TCP6"/"UNKNOWN", canonical
//     addresses of the announced family (IPv4 without leading zeros), ports
//     0..65535 without leading zeros, CRLF and no lone CR or LF.
//   - v2: version 2, command LOCAL or PROXY, family/transport nibbles within
//     the spec, an address block as long as the family needs, TLVs that tile
//     the rest exactly, the CRC32C TLV verified when present, no typed TLV
//     twice.
//
// What to do with the result
//   has_addresses() true: use source/destination instead of the socket's
//   peer and local addresses. False (v2 LOCAL, e.g. HAProxy's
//   `check-send-proxy` health checks; v1 UNKNOWN; v2 UNSPEC family): keep the
//   socket's own addresses. Errors: close the connection (the spec says abort
//   as early as possible); the peer is not a trusted proxy or is broken.
//
// Incremental
//   Feed bytes as they arrive, split anywhere; the result is the same as for
//   one feed of the whole input. A v1 line is checked as it arrives (prefix,
//   protocol word, lone CR/LF), so garbage is rejected at the first wrong byte
//   where possible. The parser buffers at most 536 bytes (inside the object,
//   no allocation until the header is complete; then the ProxyHeader's strings
//   and TLV list allocate).
//
// Cost: O(header bytes) per connection, once. sizeof(ProxyHeaderParser) is
// 1,280 bytes on x86-64 (the 536-byte buffer and a 704-byte ProxyHeader):
// allocate it only while the header is awaited and move the header out.
// Threads: a parser belongs to one connection, one thread; ProxyHeader is a
// plain value.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::net {

inline constexpr std::size_t kProxyMaxHeaderBytes = 536;  // the smallest TCP segment (576 - 40)
inline constexpr std::size_t kProxyV1MaxLine = 107;     // "PROXY UNKNOWN <v6> <v6> 65535 65535\r\n"
inline constexpr std::size_t kProxyV2FixedBytes = 16;   // signature, ver/cmd, family, length
inline constexpr std::size_t kProxyUniqueIdMax = 128;   // PP2_TYPE_UNIQUE_ID limit (spec 2.2.5)
inline constexpr std::size_t kProxyAuthorityMax = 255;  // PP2_TYPE_AUTHORITY limit (HAProxy's)

// Why a header was refused. Category "proxy_protocol"; message() reads as a
// sentence fragment ("v2 header CRC32C mismatch").
enum class ProxyError {
  ok = 0,
  not_proxy_protocol = 1,  // first bytes are neither "PROXY " nor the v2 signature
  v1_line_too_long,        // no CRLF within 107 bytes
  v1_malformed,            // bad spacing, protocol word, field count, lone CR or LF
  v1_bad_address,          // not an address of the announced family (TCP4/TCP6)
  v1_bad_port,             // not decimal 0..65535 without leading zeros
  v2_unsupported_version,  // the version nibble is not 2
  v2_bad_command,          // neither LOCAL (0x20) nor PROXY (0x21)
  v2_bad_family,           // address family above 3 or transport above 2
  v2_too_long,             // 16 + length above 536 bytes
  v2_address_truncated,    // length shorter than the family's address block
  v2_tlv_truncated,        // a TLV (or SSL sub-TLV) runs past the end of its block
  v2_tlv_bad_length,       // CRC32C not 4 bytes, UNIQUE_ID > 128, AUTHORITY > 255, SSL < 5
  v2_tlv_duplicate,        // a typed TLV (or SSL sub-TLV) appears twice
  v2_bad_crc,              // the CRC32C TLV does not match the header
};

const std::error_category& proxy_protocol_category() noexcept;
inline std::error_code make_error_code(ProxyError e) noexcept {
  return {static_cast<int>(e), proxy_protocol_category()};
}

enum class ProxyCommand : std::uint8_t {
  local,  // v2 LOCAL: the proxy's own connection (health check); keep the socket's addresses
  proxy,  // relayed on behalf of a client (every v1 header, v2 PROXY)
};

enum class ProxyTransport : std::uint8_t { unspec, stream, dgram };

// v2 TLV types (spec 2.2) and SSL client bits (2.2.6).
enum class ProxyTlvType : std::uint8_t {
  alpn = 0x01,
  authority = 0x02,
  crc32c = 0x03,
  noop = 0x04,
  unique_id = 0x05,
  ssl = 0x20,
  ssl_version = 0x21,  // sub-TLVs of ssl
  ssl_cn = 0x22,
  ssl_cipher = 0x23,
  ssl_sig_alg = 0x24,
  ssl_key_alg = 0x25,
  netns = 0x30,
};
inline constexpr std::uint8_t kProxySslClientSsl = 0x01;
inline constexpr std::uint8_t kProxySslClientCertConn = 0x02;
inline constexpr std::uint8_t kProxySslClientCertSess = 0x04;

// One TLV as sent: type and value bytes (not validated as text).
struct ProxyTlv {
  std::uint8_t type = 0;
  std::string value;
  bool operator==(const ProxyTlv&) const = default;
};

// The PP2_TYPE_SSL TLV.
struct ProxySsl {
  std::uint8_t client = 0;   // kProxySslClient* bits
  std::uint32_t verify = 0;  // 0: the client certificate was presented and verified
  std::optional<std::string> version, cn, cipher, sig_alg, key_alg;  // sub-TLVs 0x21..0x25
  std::vector<ProxyTlv> other;  // sub-TLVs of other types, in wire order
};

struct ProxyHeader {
  int version = 0;  // 1 or 2
  ProxyCommand command = ProxyCommand::proxy;
  // AF_INET, AF_INET6, AF_UNIX, or AF_UNSPEC (v1 UNKNOWN, v2 LOCAL, v2 UNSPEC
  // or a family/transport pair with an unspecified half).
  int family = AF_UNSPEC;
  ProxyTransport transport = ProxyTransport::unspec;
  // The original client (source) and the address it connected to
  // (destination). ss_family is AF_UNSPEC unless has_addresses().
  sockaddr_storage source{};
  sockaddr_storage destination{};

  // v2 TLVs, decoded. Strings are the bytes as sent.
  std::optional<std::string> alpn;       // 0x01
  std::optional<std::string> authority;  // 0x02, e.g. the TLS SNI
  std::optional<std::uint32_t> crc32c;   // 0x03, present only if it matched
  std::optional<std::string> unique_id;  // 0x05, at most 128 bytes
  std::optional<ProxySsl> ssl;           // 0x20
  std::optional<std::string> netns;      // 0x30
  // Every TLV in wire order, the typed ones above included (NOOP too): for
  // custom types (0xE0-0xEF, e.g. a cloud load balancer's endpoint id) and
  // for logging or forwarding them unchanged.
  std::vector<ProxyTlv> tlvs;

  // True when source/destination carry addresses to use in place of the socket's.
  bool has_addresses() const noexcept;
  // "192.0.2.1:56324", "[2001:db8::1]:443", "unix:/run/app.sock", "unix:@abstract";
  // "" when the address is not carried.
  std::string source_text() const { return format_proxy_address(source); }
  std::string destination_text() const { return format_proxy_address(destination); }
  static std::string format_proxy_address(const sockaddr_storage& address);
  // The first TLV of `type` in `tlvs`, or nullptr.
  const ProxyTlv* find_tlv(std::uint8_t type) const noexcept;
};

enum class ProxyParseStatus : std::uint8_t {
  need_more,  // the header is incomplete: feed the next bytes
  complete,   // header() is ready; the bytes after `consumed` are application data
  failed,     // error() says why; close the connection
};

struct ProxyFeedResult {
  ProxyParseStatus status;
  std::size_t consumed;  // bytes of this input that were header (never more)
};

class ProxyHeaderParser {
 public:
  // Takes header bytes from the front of `input`.
  // Returns need_more with consumed == input.size() while the header is
  // incomplete; complete with consumed <= input.size() (the rest is not
  // header); failed with error() set and consumed counting the bytes read up
  // to the one that failed. After complete or failed, every call returns the
  // same status with consumed == 0. Throws only std::bad_alloc (building the
  // header's strings).
  ProxyFeedResult feed(std::string_view input);

  ProxyParseStatus status() const noexcept { return status_; }
  // The parsed header. Precondition: status() == complete. The non-const
  // overload lets the caller move it out.
  const ProxyHeader& header() const noexcept { return header_; }
  ProxyHeader& header() noexcept { return header_; }
  // Size of the whole header (once complete), or bytes taken so far.
  std::size_t header_bytes() const noexcept { return size_; }
  // Set when status() == failed; make_error_code(ProxyError::...) values.
  std::error_code error() const noexcept { return error_; }

 private:
  std::size_t feed_v1(std::string_view input);
  std::size_t feed_v2(std::string_view input);
  void finish(std::error_code ec);

  char buf_[kProxyMaxHeaderBytes];
  std::size_t size_ = 0;
  std::size_t v2_total_ = 0;  // 16 + length, once the fixed part is in
  int version_ = 0;           // 0 until the first byte
  ProxyParseStatus status_ = ProxyParseStatus::need_more;
  std::error_code error_;
  ProxyHeader header_;
};

}  // namespace heartwheel::net

template <>
struct std::is_error_code_enum<heartwheel::net::ProxyError> : std::true_type {};
