// The PROXY protocol v1 line (spec section 2.1), parsed strictly:
//   "PROXY TCP4 <ipv4> <ipv4> <port> <port>"
//   "PROXY TCP6 <ipv6> <ipv6> <port> <port>"
//   "PROXY UNKNOWN[ <anything>]"
// with exactly one space between fields. The spec forbids leading zeros in
// IPv4 octets and ports ("to avoid any possible confusion with octal").
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "proxy_protocol_detail.h"

namespace heartwheel::net::detail {

namespace {

constexpr std::array<std::string_view, 4> kWords = {"TCP4 ", "TCP6 ", "UNKNOWN ", "UNKNOWN\r"};

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// Decimal 0..max, 1 to `digits` digits, no leading zero.
bool parse_decimal(std::string_view s, std::size_t digits, unsigned max, unsigned& out) noexcept {
  if (s.empty() || s.size() > digits || (s.size() > 1 && s[0] == '0')) return false;
  unsigned v = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > max) return false;
  out = v;
  return true;
}

// Exactly four dotted decimal octets, no leading zeros (inet_pton's leniency
// differs between C libraries, so this does not rely on it).
bool parse_ipv4(std::string_view s, in_addr& out) noexcept {
  unsigned char octets[4];
  for (int i = 0; i < 4; ++i) {
    const auto dot = s.find('.');
    if ((i < 3) == (dot == std::string_view::npos)) return false;
    unsigned v = 0;
    if (!parse_decimal(s.substr(0, dot), 3, 255, v)) return false;
    octets[i] = static_cast<unsigned char>(v);
    s = i < 3 ? s.substr(dot + 1) : std::string_view();
  }
  std::memcpy(&out, octets, 4);
  return true;
}

// The RFC 4291 text forms (one "::", 1-4 hex digits per group, an optional
// dotted IPv4 tail as inet_ntop writes for mapped addresses). No zone ids.
bool parse_ipv6(std::string_view s, in6_addr& out) noexcept {
  constexpr std::size_t kMax = 45;  // "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"
  if (s.size() < 2 || s.size() > kMax) return false;
  char text[kMax + 1];
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool hex = is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex && c != ':' && c != '.') return false;
    text[i] = c;
  }
  text[s.size()] = '\0';
  return ::inet_pton(AF_INET6, text, &out) == 1;
}

// Splits "a b c d" on single spaces into exactly four non-empty fields.
bool split_four(std::string_view s, std::array<std::string_view, 4>& fields) noexcept {
  for (std::size_t i = 0; i < 4; ++i) {
    const auto space = s.find(' ');
    if ((i < 3) == (space == std::string_view::npos)) return false;
    fields[i] = s.substr(0, space);
    if (fields[i].empty()) return false;
    s = i < 3 ? s.substr(space + 1) : std::string_view();
  }
  return true;
}

template <typename SockaddrIn>
SockaddrIn& as(sockaddr_storage& ss) noexcept {
  return reinterpret_cast<SockaddrIn&>(ss);
}

}  // namespace

bool proxy_v1_word_plausible(std::string_view word) noexcept {
  for (std::string_view candidate : kWords) {
    const std::size_t n = std::min(word.size(), candidate.size());
    if (word.substr(0, n) == candidate.substr(0, n)) return true;
  }
  return false;
}

std::error_code parse_proxy_v1(std::string_view line, ProxyHeader& out) {
  if (line.substr(0, kProxyV1Prefix.size()) != kProxyV1Prefix)
    return ProxyError::not_proxy_protocol;
  const std::string_view rest = line.substr(kProxyV1Prefix.size());
  out.version = 1;
  out.command = ProxyCommand::proxy;
  // "the receiver must ignore anything presented before the CRLF"
  if (rest == "UNKNOWN" || rest.substr(0, 8) == "UNKNOWN ") return {};

  const bool v4 = rest.substr(0, 5) == "TCP4 ";
  if (!v4 && rest.substr(0, 5) != "TCP6 ") return ProxyError::v1_malformed;
  std::array<std::string_view, 4> f;
  if (!split_four(rest.substr(5), f)) return ProxyError::v1_malformed;

  sockaddr_storage src{}, dst{};
  if (v4) {
    if (!parse_ipv4(f[0], as<sockaddr_in>(src).sin_addr) ||
        !parse_ipv4(f[1], as<sockaddr_in>(dst).sin_addr))
      return ProxyError::v1_bad_address;
  } else if (!parse_ipv6(f[0], as<sockaddr_in6>(src).sin6_addr) ||
             !parse_ipv6(f[1], as<sockaddr_in6>(dst).sin6_addr)) {
    return ProxyError::v1_bad_address;
  }
  unsigned sport = 0, dport = 0;
  if (!parse_decimal(f[2], 5, 65535, sport) || !parse_decimal(f[3], 5, 65535, dport))
    return ProxyError::v1_bad_port;

  const int family = v4 ? AF_INET : AF_INET6;
  src.ss_family = dst.ss_family = static_cast<sa_family_t>(family);
  if (v4) {
    as<sockaddr_in>(src).sin_port = htons(static_cast<std::uint16_t>(sport));
    as<sockaddr_in>(dst).sin_port = htons(static_cast<std::uint16_t>(dport));
  } else {
    as<sockaddr_in6>(src).sin6_port = htons(static_cast<std::uint16_t>(sport));
    as<sockaddr_in6>(dst).sin6_port = htons(static_cast<std::uint16_t>(dport));
  }
  out.family = family;
  out.transport = ProxyTransport::stream;
  out.source = src;
  out.destination = dst;
  return {};
}

}  // namespace heartwheel::net::detail
