// heartwheel/common/cidr_set.h - a set of IP networks (CIDR blocks), for "is
// this peer one we trust": PROXY protocol headers are believed only from the
// listed load balancers (--proxy-protocol-from CIDR, repeatable), as HAProxy
// (`tcp-request connection expect-proxy layer4 if { src ... }`) and nginx
// (`set_real_ip_from`) document.
//
// Entries: "10.0.0.0/8", "192.168.1.7" (= /32), "::1" (= /128),
// "fd00::/8". An IPv4 peer seen on an IPv6 socket as ::ffff:a.b.c.d matches
// IPv4 entries (and ::ffff:0:0/96 entries). An entry with bits set past its
// prefix ("10.0.0.1/8") is refused rather than masked: it is usually a typo
// for a /32 or a different network, and this list grants trust.
//
// Cost: contains() is O(entries) with no allocation (a handful of load
// balancers is the use). It lives in common, below net (ServerOptions::
// proxy_protocol_from) and auth (auth::CidrSet names it too): it reads
// sockaddr_in/_in6 only.
// Threads: add() on one thread before use; const calls from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <sys/socket.h>

namespace heartwheel {

class CidrSet {
 public:
  // Adds a network. Throws std::invalid_argument naming `cidr` when it is not
  // an IPv4/IPv6 address with an optional /prefix in range, or has host bits
  // set (the message suggests the network address).
  void add(std::string_view cidr);
  // Builds a set from a list (the repeatable flag's values).
  static CidrSet parse(const std::vector<std::string>& cidrs);

  // True if `addr` (AF_INET or AF_INET6; anything else: false) is in one of
  // the networks. Precondition: `addr` points at a sockaddr_in or
  // sockaddr_in6 as its family says.
  bool contains(const sockaddr* addr) const noexcept;
  // The same for a numeric address text ("10.1.2.3", "::1"); false if it is
  // not one.
  bool contains(std::string_view address) const noexcept;

  bool empty() const noexcept { return entries_.empty(); }
  std::size_t size() const noexcept { return entries_.size(); }
  // The entries as written back in canonical form ("10.0.0.0/8").
  std::vector<std::string> to_strings() const;

 private:
  struct Entry {
    std::array<std::uint8_t, 16> bytes{};  // IPv4 in the first 4
    bool v6 = false;
    int prefix = 0;
  };
  static bool match(const Entry& e, const std::uint8_t* bytes, bool v6) noexcept;
  bool contains_bytes(const std::uint8_t* bytes, bool v6) const noexcept;
  std::vector<Entry> entries_;
};

}  // namespace heartwheel
