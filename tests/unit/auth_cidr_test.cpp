// Trusted networks for the PROXY protocol (cidr_set.h): IPv4, IPv6, mapped
// addresses, prefixes, and the entries refused.
#include <heartwheel/auth/cidr_set.h>

#include <catch2/catch.hpp>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>

using heartwheel::auth::CidrSet;
using Catch::Contains;

namespace {

sockaddr_in v4(const char* text) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(1234);
  REQUIRE(inet_pton(AF_INET, text, &a.sin_addr) == 1);
  return a;
}

sockaddr_in6 v6(const char* text) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  REQUIRE(inet_pton(AF_INET6, text, &a.sin6_addr) == 1);
  return a;
}

template <class A>
bool has(const CidrSet& set, const A& addr) {
  return set.contains(reinterpret_cast<const sockaddr*>(&addr));
}

}  // namespace

TEST_CASE("IPv4 networks contain their addresses and no others", "[auth][cidr]") {
  const CidrSet set = CidrSet::parse({"10.0.0.0/8", "192.168.1.7", "172.16.0.0/12"});
  CHECK(has(set, v4("10.0.0.1")));
  CHECK(has(set, v4("10.255.255.255")));
  CHECK_FALSE(has(set, v4("11.0.0.0")));
  CHECK(has(set, v4("192.168.1.7")));
  CHECK_FALSE(has(set, v4("192.168.1.8")));
  CHECK(has(set, v4("172.31.255.255")));
  CHECK_FALSE(has(set, v4("172.32.0.0")));
  CHECK(set.contains("10.1.2.3"));
  CHECK_FALSE(set.contains("8.8.8.8"));
  CHECK_FALSE(set.contains("not an address"));
  CHECK(set.to_strings() ==
        std::vector<std::string>{"10.0.0.0/8", "192.168.1.7/32", "172.16.0.0/12"});
}

TEST_CASE("IPv6 networks, and IPv4 peers on IPv6 sockets", "[auth][cidr]") {
  const CidrSet set = CidrSet::parse({"::1", "fd00::/8", "2001:db8:1::/48", "127.0.0.0/8"});
  CHECK(has(set, v6("::1")));
  CHECK_FALSE(has(set, v6("::2")));
  CHECK(has(set, v6("fd12:3456::1")));
  CHECK_FALSE(has(set, v6("fe80::1")));
  CHECK(has(set, v6("2001:db8:1:ffff::1")));
  CHECK_FALSE(has(set, v6("2001:db8:2::1")));
  // ::ffff:127.0.0.1 is 127.0.0.1.
  CHECK(has(set, v6("::ffff:127.0.0.1")));
  CHECK_FALSE(has(set, v6("::ffff:128.0.0.1")));
  CHECK(has(set, v4("127.0.0.1")));
  // An IPv4 entry never matches a plain IPv6 address with the same bytes.
  const CidrSet zero = CidrSet::parse({"0.0.0.0/0"});
  CHECK(has(zero, v4("1.2.3.4")));
  CHECK(has(zero, v6("::ffff:1.2.3.4")));
  CHECK_FALSE(has(zero, v6("2001:db8::1")));
  CHECK(has(CidrSet::parse({"::/0"}), v6("2001:db8::1")));
  CHECK_FALSE(has(CidrSet::parse({"::/0"}), v4("1.2.3.4")));
}

TEST_CASE("Prefixes that are not byte-aligned", "[auth][cidr]") {
  const CidrSet set = CidrSet::parse({"192.168.0.128/25", "2001:db8::/33"});
  CHECK(set.contains("192.168.0.128"));
  CHECK(set.contains("192.168.0.255"));
  CHECK_FALSE(set.contains("192.168.0.127"));
  CHECK(set.contains("2001:db8:7fff::1"));
  CHECK_FALSE(set.contains("2001:db8:8000::1"));
}

TEST_CASE("An empty set contains nothing, and other families are never contained", "[auth][cidr]") {
  const CidrSet empty;
  CHECK(empty.empty());
  CHECK_FALSE(has(empty, v4("127.0.0.1")));
  sockaddr unix_like{};
  unix_like.sa_family = AF_UNIX;
  CHECK_FALSE(CidrSet::parse({"0.0.0.0/0"}).contains(&unix_like));
  CHECK_FALSE(CidrSet::parse({"0.0.0.0/0"}).contains(static_cast<const sockaddr*>(nullptr)));
}

TEST_CASE("Bad networks are refused by name", "[auth][cidr]") {
  CidrSet set;
  CHECK_THROWS_WITH(set.add("10.0.0.1/8"),
                    "network \"10.0.0.1/8\": has bits set past its /8 prefix; the network is "
                    "10.0.0.0/8 (or write a single address without a prefix)");
  CHECK_THROWS_WITH(set.add("fd00::1/8"), Contains("the network is fd00::/8"));
  CHECK_THROWS_WITH(set.add("10.0.0.0/33"), Contains("the prefix length is over 32"));
  CHECK_THROWS_WITH(set.add("::/129"), Contains("the prefix length is over 128"));
  CHECK_THROWS_WITH(set.add("10.0.0.0/"), Contains("not a number"));
  CHECK_THROWS_WITH(set.add("10.0.0.0/-1"), Contains("not a number"));
  CHECK_THROWS_WITH(set.add("10.0.0.0/8x"), Contains("not a number"));
  CHECK_THROWS_WITH(set.add("localhost"), Contains("not an IPv4 or IPv6 address"));
  CHECK_THROWS_WITH(set.add("10.0.0"), Contains("not an IPv4 or IPv6 address"));
  CHECK_THROWS_WITH(set.add(""), Contains("not an IPv4 or IPv6 address"));
  CHECK(set.empty());
}
