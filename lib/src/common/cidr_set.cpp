// A set of IP networks (cidr_set.h). Addresses are parsed by inet_pton and
// printed by inet_ntop (libc), compared as bytes under the prefix mask.
#include <heartwheel/common/cidr_set.h>

#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>

namespace heartwheel {

namespace {

// ::ffff:a.b.c.d, an IPv4 address on an IPv6 socket.
bool is_v4_mapped(const std::uint8_t* b) noexcept {
  static constexpr std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(b, prefix, sizeof prefix) == 0;
}

bool prefix_equal(const std::uint8_t* a, const std::uint8_t* b, int bits) noexcept {
  const int whole = bits / 8;
  if (std::memcmp(a, b, static_cast<std::size_t>(whole)) != 0) return false;
  const int rest = bits % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

std::string format(const std::uint8_t* bytes, bool v6) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes, buf, sizeof buf);
  return buf;
}

}  // namespace

void CidrSet::add(std::string_view cidr) {
  const std::string text(cidr);
  const auto bad = [&](const std::string& why) {
    throw std::invalid_argument("network \"" + text + "\": " + why);
  };
  const std::size_t slash = text.find('/');
  const std::string address = text.substr(0, slash);
  Entry e;
  if (inet_pton(AF_INET, address.c_str(), e.bytes.data()) == 1) {
    e.v6 = false;
  } else if (inet_pton(AF_INET6, address.c_str(), e.bytes.data()) == 1) {
    e.v6 = true;
  } else {
    bad("not an IPv4 or IPv6 address with an optional /prefix (e.g. 10.0.0.0/8, ::1)");
  }
  const int max_prefix = e.v6 ? 128 : 32;
  e.prefix = max_prefix;
  if (slash != std::string::npos) {
    const std::string digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      bad("the prefix length is not a number");
    e.prefix = std::stoi(digits);
    if (e.prefix > max_prefix) bad("the prefix length is over " + std::to_string(max_prefix));
  }
  std::array<std::uint8_t, 16> network{};
  const int whole = e.prefix / 8;
  std::memcpy(network.data(), e.bytes.data(), static_cast<std::size_t>(whole));
  if (e.prefix % 8) network[whole] = e.bytes[whole] & static_cast<std::uint8_t>(0xff << (8 - e.prefix % 8));
  if (std::memcmp(network.data(), e.bytes.data(), e.v6 ? 16 : 4) != 0)
    bad("has bits set past its /" + std::to_string(e.prefix) + " prefix; the network is " +
        format(network.data(), e.v6) + "/" + std::to_string(e.prefix) +
        " (or write a single address without a prefix)");
  entries_.push_back(e);
}

CidrSet CidrSet::parse(const std::vector<std::string>& cidrs) {
  CidrSet set;
  for (const std::string& c : cidrs) set.add(c);
  return set;
}

bool CidrSet::match(const Entry& e, const std::uint8_t* bytes, bool v6) noexcept {
  if (e.v6 == v6) return prefix_equal(e.bytes.data(), bytes, e.prefix);
  // An IPv4-mapped IPv6 address is the IPv4 address.
  if (v6 && !e.v6 && is_v4_mapped(bytes)) return prefix_equal(e.bytes.data(), bytes + 12, e.prefix);
  return false;
}

bool CidrSet::contains_bytes(const std::uint8_t* bytes, bool v6) const noexcept {
  for (const Entry& e : entries_)
    if (match(e, bytes, v6)) return true;
  return false;
}

bool CidrSet::contains(const sockaddr* addr) const noexcept {
  if (!addr) return false;
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return contains_bytes(reinterpret_cast<const std::uint8_t*>(&in->sin_addr), false);
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    return contains_bytes(reinterpret_cast<const std::uint8_t*>(&in6->sin6_addr), true);
  }
  return false;
}

bool CidrSet::contains(std::string_view address) const noexcept {
  char text[INET6_ADDRSTRLEN + 1] = {};
  if (address.size() >= sizeof text) return false;
  address.copy(text, address.size());
  std::uint8_t bytes[16] = {};
  if (inet_pton(AF_INET, text, bytes) == 1) return contains_bytes(bytes, false);
  if (inet_pton(AF_INET6, text, bytes) == 1) return contains_bytes(bytes, true);
  return false;
}

std::vector<std::string> CidrSet::to_strings() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_)
    out.push_back(format(e.bytes.data(), e.v6) + "/" + std::to_string(e.prefix));
  return out;
}

}  // namespace heartwheel
