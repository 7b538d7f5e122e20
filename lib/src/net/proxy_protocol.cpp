// See heartwheel/net/proxy_protocol.h. This file collects the header's bytes
// and decides, byte by byte, as early as the spec allows; whole headers are
// parsed in proxy_protocol_v1.cpp and proxy_protocol_v2.cpp.
//
// Every check is tied to the position of the byte that fails it, never to
// where a read happened to end, so a header split anywhere gives the same
// result (and the same error) as the header in one piece.
#include <heartwheel/net/address.h>
#include <heartwheel/net/proxy_protocol.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>

#include "proxy_protocol_detail.h"

namespace heartwheel::net {

namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "proxy_protocol"; }
  std::string message(int value) const override {
    switch (static_cast<ProxyError>(value)) {
      case ProxyError::ok:
        return "success";
      case ProxyError::not_proxy_protocol:
        return "connection does not start with a PROXY protocol header";
      case ProxyError::v1_line_too_long:
        return "v1 header has no CRLF within 107 bytes";
      case ProxyError::v1_malformed:
        return "v1 header is malformed";
      case ProxyError::v1_bad_address:
        return "v1 header has an invalid address";
      case ProxyError::v1_bad_port:
        return "v1 header has an invalid port";
      case ProxyError::v2_unsupported_version:
        return "v2 header has an unsupported version";
      case ProxyError::v2_bad_command:
        return "v2 header has an unknown command";
      case ProxyError::v2_bad_family:
        return "v2 header has an unknown address family or transport";
      case ProxyError::v2_too_long:
        return "v2 header is longer than 536 bytes";
      case ProxyError::v2_address_truncated:
        return "v2 header is too short for its address family";
      case ProxyError::v2_tlv_truncated:
        return "v2 header has a TLV running past its end";
      case ProxyError::v2_tlv_bad_length:
        return "v2 header has a TLV of invalid length";
      case ProxyError::v2_tlv_duplicate:
        return "v2 header repeats a TLV";
      case ProxyError::v2_bad_crc:
        return "v2 header CRC32C mismatch";
    }
    return "unknown proxy_protocol error " + std::to_string(value);
  }
};

}  // namespace

const std::error_category& proxy_protocol_category() noexcept {
  static const Category category;
  return category;
}

bool ProxyHeader::has_addresses() const noexcept {
  return command == ProxyCommand::proxy &&
         (family == AF_INET || family == AF_INET6 || family == AF_UNIX);
}

std::string ProxyHeader::format_proxy_address(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET || address.ss_family == AF_INET6)
    return format_address(reinterpret_cast<const sockaddr*>(&address));
  if (address.ss_family != AF_UNIX) return {};
  // 108 bytes as sent: a path up to its first NUL, or (first byte NUL) a
  // Linux abstract name, shown as "@name" without the NUL padding.
  const auto& un = reinterpret_cast<const sockaddr_un&>(address);
  const std::string_view path(un.sun_path, sizeof un.sun_path);
  if (!path.empty() && path[0] == '\0') {
    const auto last = path.find_last_not_of('\0');
    return "unix:@" +
           std::string(last == std::string_view::npos ? std::string_view() : path.substr(1, last));
  }
  return "unix:" + std::string(path.substr(0, path.find('\0')));
}

const ProxyTlv* ProxyHeader::find_tlv(std::uint8_t type) const noexcept {
  const auto it =
      std::find_if(tlvs.begin(), tlvs.end(), [type](const ProxyTlv& t) { return t.type == type; });
  return it == tlvs.end() ? nullptr : &*it;
}

void ProxyHeaderParser::finish(std::error_code ec) {
  error_ = ec;
  status_ = ec ? ProxyParseStatus::failed : ProxyParseStatus::complete;
}

ProxyFeedResult ProxyHeaderParser::feed(std::string_view input) {
  if (status_ != ProxyParseStatus::need_more || input.empty()) return {status_, 0};
  if (version_ == 0) {
    // The first byte decides; no third possibility (the spec's "never guess").
    if (input[0] == detail::kProxyV1Prefix[0]) {
      version_ = 1;
    } else if (static_cast<unsigned char>(input[0]) == detail::kProxyV2Signature[0]) {
      version_ = 2;
    } else {
      finish(ProxyError::not_proxy_protocol);
      return {status_, 1};
    }
  }
  const std::size_t used = version_ == 1 ? feed_v1(input) : feed_v2(input);
  return {status_, used};
}

// One byte at a time: a v1 line is at most 107 bytes, and stopping exactly at
// the LF is what keeps the application's bytes out of the header.
std::size_t ProxyHeaderParser::feed_v1(std::string_view input) {
  const std::string_view prefix = detail::kProxyV1Prefix;
  std::size_t used = 0;
  while (used < input.size() && status_ == ProxyParseStatus::need_more) {
    const char b = input[used++];
    const std::size_t i = size_;
    buf_[size_++] = b;
    if (i < prefix.size()) {
      if (b != prefix[i]) finish(ProxyError::not_proxy_protocol);
      continue;
    }
    const bool after_cr = buf_[i - 1] == '\r';
    if (after_cr != (b == '\n')) {  // CR not followed by LF, or LF without CR
      finish(ProxyError::v1_malformed);
    } else if (b == '\n') {
      finish(detail::parse_proxy_v1(std::string_view(buf_, i - 1), header_));
    } else if (!detail::proxy_v1_word_plausible(
                   std::string_view(buf_ + prefix.size(), size_ - prefix.size()))) {
      finish(ProxyError::v1_malformed);
    } else if (size_ == kProxyV1MaxLine) {
      finish(ProxyError::v1_line_too_long);
    }
  }
  return used;
}

std::size_t ProxyHeaderParser::feed_v2(std::string_view input) {
  auto* bytes = reinterpret_cast<unsigned char*>(buf_);
  std::size_t used = 0;
  // The fixed part byte by byte, so a wrong signature or version is refused
  // at its first byte.
  while (size_ < kProxyV2FixedBytes && used < input.size()) {
    const std::size_t i = size_;
    bytes[size_++] = static_cast<unsigned char>(input[used++]);
    if (i < sizeof detail::kProxyV2Signature) {
      if (bytes[i] != detail::kProxyV2Signature[i]) {
        finish(ProxyError::not_proxy_protocol);
        return used;
      }
    } else if (auto ec = detail::check_proxy_v2_fixed(bytes, i, v2_total_)) {
      finish(ec);
      return used;
    }
  }
  if (size_ < kProxyV2FixedBytes) return used;
  // The rest in one copy: its length is known.
  const std::size_t take = std::min(v2_total_ - size_, input.size() - used);
  std::memcpy(buf_ + size_, input.data() + used, take);
  size_ += take;
  used += take;
  if (size_ == v2_total_) {
    finish(detail::parse_proxy_v2(bytes, size_, header_));
  }
  return used;
}

}  // namespace heartwheel::net
