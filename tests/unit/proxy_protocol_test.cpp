// The PROXY protocol header parser: headers captured from HAProxy 2.6, v1
// and v2 headers packed by hand (tcp4, tcp6, unix, unknown families, LOCAL,
// every TLV, CRC32C good and bad), every malformed shape, and every header
// fed split at every byte position with application bytes behind it.
#include <arpa/inet.h>
#include <heartwheel/net/proxy_protocol.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "proxy_headers.h"

using namespace heartwheel::net;
using namespace proxytest;
using E = ProxyError;
using namespace std::string_literals;  // "\x00"s keeps its NUL bytes

namespace {

// Everything a header says, as one comparable string.
std::string describe(const ProxyHeader& h) {
  std::ostringstream o;
  auto opt = [&](const char* name, const std::optional<std::string>& v) {
    if (v) o << ' ' << name << '=' << Catch::Detail::stringify(*v);
  };
  o << 'v' << h.version << (h.command == ProxyCommand::local ? " local" : " proxy") << " fam "
    << h.family << " tr " << static_cast<int>(h.transport) << ' ' << h.source_text() << " -> "
    << h.destination_text();
  opt("alpn", h.alpn);
  opt("authority", h.authority);
  if (h.crc32c) o << " crc=" << *h.crc32c;
  opt("unique_id", h.unique_id);
  opt("netns", h.netns);
  if (h.ssl) {
    o << " ssl client=" << int{h.ssl->client} << " verify=" << h.ssl->verify;
    opt("version", h.ssl->version);
    opt("cn", h.ssl->cn);
    opt("cipher", h.ssl->cipher);
    opt("sig", h.ssl->sig_alg);
    opt("key", h.ssl->key_alg);
    for (const auto& t : h.ssl->other) o << " sub" << int{t.type} << '=' << t.value.size();
  }
  for (const auto& t : h.tlvs) o << " tlv" << int{t.type} << '=' << t.value.size();
  return o.str();
}

struct Outcome {
  ProxyParseStatus status = ProxyParseStatus::need_more;
  std::error_code error;
  std::size_t consumed = 0;
  std::string header;  // describe() when complete
};

Outcome feed_pieces(const std::vector<std::string_view>& pieces) {
  ProxyHeaderParser p;
  Outcome out;
  for (auto piece : pieces) {
    const auto r = p.feed(piece);
    out.consumed += r.consumed;
    out.status = r.status;
    if (r.status == ProxyParseStatus::need_more) REQUIRE(r.consumed == piece.size());
    if (r.status != ProxyParseStatus::need_more) break;
  }
  out.error = p.error();
  if (out.status == ProxyParseStatus::complete) out.header = describe(p.header());
  return out;
}

Outcome parse(std::string_view input) { return feed_pieces({input}); }

ProxyHeader parse_ok(std::string_view input) {
  ProxyHeaderParser p;
  const auto r = p.feed(input);
  INFO(Catch::Detail::stringify(std::string(input)) << " -> " << p.error().message());
  REQUIRE(r.status == ProxyParseStatus::complete);
  REQUIRE(r.consumed == input.size());
  return p.header();
}

std::error_code parse_error(std::string_view input) {
  const Outcome o = parse(input);
  INFO(Catch::Detail::stringify(std::string(input)));
  REQUIRE(o.status == ProxyParseStatus::failed);
  return o.error;
}

// The outcome of `input` in one piece must equal the outcome of every
// two-piece split, of three-piece splits around each position, and of
// byte-by-byte feeding.
void check_split_invariance(const std::string& input) {
  INFO("input " << Catch::Detail::stringify(input));
  const Outcome whole = parse(input);
  auto same = [&](const Outcome& o) {
    CHECK(o.status == whole.status);
    CHECK(o.error == whole.error);
    CHECK(o.consumed == whole.consumed);
    CHECK(o.header == whole.header);
  };
  const std::string_view in = input;
  for (std::size_t k = 0; k <= in.size(); ++k) {
    INFO("split at " << k);
    same(feed_pieces({in.substr(0, k), in.substr(k)}));
    if (k + 1 < in.size()) same(feed_pieces({in.substr(0, k), in.substr(k, 1), in.substr(k + 1)}));
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < in.size(); ++i) bytes.push_back(in.substr(i, 1));
  same(feed_pieces(bytes));
}

// Real headers from HAProxy 2.6.12 (Debian 12), captured on loopback with a
// listener behind `server s1 ... send-proxy[-v2]`; each followed by "hello".
const std::string kHaproxyV1 = "PROXY TCP4 127.0.0.1 127.0.0.1 55960 18082\r\n";
const std::string kHaproxyV2 =
    hex_bytes("0d0a0d0a000d0a515549540a2111000c7f0000017f000001a95482ff");
// proxy-v2-options crc32c,unique-id
const std::string kHaproxyV2Crc = hex_bytes(
    "0d0a0d0a000d0a515549540a211100447f0000017f000001a780a639030004dcaf5fa005002e3746303030303031"
    "3a413738305f37463030303030313a413633395f36423034353841375f303030303a33323431");
// check-send-proxy health check (LOCAL), plain and with proxy-v2-options crc32c
const std::string kHaproxyLocal = hex_bytes("0d0a0d0a000d0a515549540a20000000");
const std::string kHaproxyLocalCrc = hex_bytes("0d0a0d0a000d0a515549540a20000007030004a9b87e8f");

}  // namespace

TEST_CASE("The v1 line HAProxy 2.6 sends gives its addresses and leaves the request behind it",
          "[proxy][v1]") {
  const std::string input = kHaproxyV1 + "GET / HTTP/1.1\r\n\r\n";
  ProxyHeaderParser p;
  const auto r = p.feed(input);
  REQUIRE(r.status == ProxyParseStatus::complete);
  CHECK(r.consumed == kHaproxyV1.size());
  CHECK(input.substr(r.consumed) == "GET / HTTP/1.1\r\n\r\n");
  const ProxyHeader& h = p.header();
  CHECK(h.version == 1);
  CHECK(h.command == ProxyCommand::proxy);
  CHECK(h.has_addresses());
  CHECK(h.family == AF_INET);
  CHECK(h.transport == ProxyTransport::stream);
  CHECK(h.source_text() == "127.0.0.1:55960");
  CHECK(h.destination_text() == "127.0.0.1:18082");
  const auto& src = reinterpret_cast<const sockaddr_in&>(h.source);
  CHECK(ntohs(src.sin_port) == 55960);
  CHECK(ntohl(src.sin_addr.s_addr) == 0x7F000001u);
  CHECK(h.tlvs.empty());
  CHECK(p.header_bytes() == kHaproxyV1.size());
  // Nothing more is taken once complete.
  CHECK(p.feed("more").consumed == 0);
  CHECK(p.feed("more").status == ProxyParseStatus::complete);
}

TEST_CASE("Headers captured from HAProxy 2.6 parse, the CRC32C one verified", "[proxy][v2]") {
  const ProxyHeader plain = parse_ok(kHaproxyV2);
  CHECK(plain.version == 2);
  CHECK(plain.source_text() == "127.0.0.1:43348");
  CHECK(plain.destination_text() == "127.0.0.1:33535");
  CHECK(plain.tlvs.empty());

  const ProxyHeader crc = parse_ok(kHaproxyV2Crc);
  CHECK(crc.source_text() == "127.0.0.1:42880");
  CHECK(crc.destination_text() == "127.0.0.1:42553");
  REQUIRE(crc.crc32c);
  CHECK(*crc.crc32c == 0xdcaf5fa0u);
  CHECK(crc.unique_id == "7F000001:A780_7F000001:A639_6B0458A7_0000:3241");
  REQUIRE(crc.tlvs.size() == 2);
  CHECK(crc.tlvs[0].type == 0x03);
  CHECK(crc.tlvs[1].type == 0x05);

  for (const auto& local : {kHaproxyLocal, kHaproxyLocalCrc}) {
    const ProxyHeader h = parse_ok(local);
    CHECK(h.command == ProxyCommand::local);
    CHECK_FALSE(h.has_addresses());
    CHECK(h.source_text().empty());
    CHECK(h.source.ss_family == AF_UNSPEC);
  }
}

TEST_CASE("v1 TCP6 lines parse in full, compressed and IPv4-mapped forms", "[proxy][v1]") {
  const ProxyHeader a = parse_ok("PROXY TCP6 2001:db8::1 ::1 65535 0\r\n");
  CHECK(a.family == AF_INET6);
  CHECK(a.source_text() == "[2001:db8::1]:65535");
  CHECK(a.destination_text() == "[::1]:0");
  const ProxyHeader b = parse_ok(
      "PROXY TCP6 FFFF:ffff:ffff:ffff:ffff:ffff:ffff:ffff 0000:0000:0000:0000:0000:0000:0000:0001 "
      "1 2\r\n");
  CHECK(b.source_text() == "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:1");
  CHECK(b.destination_text() == "[::1]:2");
  CHECK(parse_ok("PROXY TCP6 ::ffff:192.0.2.1 :: 80 443\r\n").source_text() ==
        "[::ffff:192.0.2.1]:80");
}

TEST_CASE("v1 UNKNOWN is accepted short and long and carries no addresses", "[proxy][v1]") {
  for (const char* line : {"PROXY UNKNOWN\r\n", "PROXY UNKNOWN ffff::1 ffff::2 65535 65535\r\n",
                           "PROXY UNKNOWN anything at all, even \x01 bytes\r\n"}) {
    const ProxyHeader h = parse_ok(line);
    CHECK(h.version == 1);
    CHECK(h.command == ProxyCommand::proxy);
    CHECK(h.family == AF_UNSPEC);
    CHECK_FALSE(h.has_addresses());
    CHECK(h.destination_text().empty());
  }
}

TEST_CASE("v1 lines of the maximum lengths are accepted, one byte more is refused at byte 107",
          "[proxy][v1]") {
  const std::string v6 = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
  const std::string tcp6 = "PROXY TCP6 " + v6 + " " + v6 + " 65535 65535\r\n";
  CHECK(tcp6.size() == 104);
  parse_ok(tcp6);
  const std::string tcp4 = "PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n";
  CHECK(tcp4.size() == 56);
  parse_ok(tcp4);
  const std::string unknown = "PROXY UNKNOWN " + v6 + " " + v6 + " 65535 65535\r\n";
  REQUIRE(unknown.size() == kProxyV1MaxLine);
  parse_ok(unknown);

  const std::string longer = "PROXY UNKNOWN " + v6 + " " + v6 + " 65535 655355\r\n";
  const Outcome o = parse(longer);
  CHECK(o.status == ProxyParseStatus::failed);
  CHECK(o.error == E::v1_line_too_long);
  CHECK(o.consumed == kProxyV1MaxLine);  // refused without reading further
}

TEST_CASE("Malformed v1 lines are refused with the error that names the fault", "[proxy][v1]") {
  const std::pair<const char*, E> cases[] = {
      {"GET / HTTP/1.1\r\n", E::not_proxy_protocol},
      {"PROXX TCP4\r\n", E::not_proxy_protocol},
      {"proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", E::not_proxy_protocol},
      {"PROXY\r\n", E::not_proxy_protocol},
      {"PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n", E::v1_malformed},
      {"PROXY \r\n", E::v1_malformed},
      {"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n", E::v1_malformed},
      {"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", E::v1_malformed},
      {"PROXY TCP4\r\n", E::v1_malformed},
      {"PROXY TCP4 \r\n", E::v1_malformed},
      {"PROXY UNKNOWNX\r\n", E::v1_malformed},
      {"PROXY UNKNOWN\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4\r5.6.7.8 1 2\r\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4\n5.6.7.8 1 2\r\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", E::v1_malformed},
      {"PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n", E::v1_malformed},
      {"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1..3.4 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1.2.3.4. 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1.2.3.+4 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 0x1.2.3.4 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1.2.3.4 ::1 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 localhost 5.6.7.8 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP6 1.2.3.4 ::1 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP6 1::2::3 ::1 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP6 12345::1 ::1 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP6 [::1] ::1 1 2\r\n", E::v1_bad_address},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", E::v1_bad_port},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n", E::v1_bad_port},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 00 2\r\n", E::v1_bad_port},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n", E::v1_bad_port},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n", E::v1_bad_port},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 1 99999999999\r\n", E::v1_bad_port},
      {"PROXY TCP4 1.2.3.4 5.6.7.8 1 0x10\r\n", E::v1_bad_port},
  };
  for (const auto& [line, expected] : cases) {
    INFO(Catch::Detail::stringify(std::string(line)));
    CHECK(parse_error(line) == expected);
  }
}

TEST_CASE("A connection that does not start with a header is refused at the first wrong byte",
          "[proxy]") {
  const std::pair<std::string, std::size_t> cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", 1},  // plain HTTP: never guess "no header"
      {"\x16\x03\x01\x02\x00"s, 1},   // a TLS ClientHello
      {"PROXZ", 5},
      {"\r\n\r\n\x01", 5},  // v2 signature, wrong at byte 5
      {kSignature.substr(0, 11) + "X", 12},
  };
  for (const auto& [input, consumed] : cases) {
    const Outcome o = parse(input);
    CHECK(o.status == ProxyParseStatus::failed);
    CHECK(o.error == E::not_proxy_protocol);
    CHECK(o.consumed == consumed);
  }
}

TEST_CASE("v2 TCP and UDP over IPv4 and IPv6 give their addresses and transport", "[proxy][v2]") {
  const ProxyHeader tcp4 =
      parse_ok(V2{0x21, 0x11, ipv4_block("192.0.2.1", "198.51.100.7", 56324, 443)}.build());
  CHECK(tcp4.version == 2);
  CHECK(tcp4.command == ProxyCommand::proxy);
  CHECK(tcp4.family == AF_INET);
  CHECK(tcp4.transport == ProxyTransport::stream);
  CHECK(tcp4.source_text() == "192.0.2.1:56324");
  CHECK(tcp4.destination_text() == "198.51.100.7:443");

  const ProxyHeader udp4 =
      parse_ok(V2{0x21, 0x12, ipv4_block("10.0.0.1", "10.0.0.2", 53, 5353)}.build());
  CHECK(udp4.transport == ProxyTransport::dgram);
  CHECK(udp4.source_text() == "10.0.0.1:53");

  const ProxyHeader tcp6 =
      parse_ok(V2{0x21, 0x21, ipv6_block("2001:db8::1", "2001:db8::ff", 1, 65535)}.build());
  CHECK(tcp6.family == AF_INET6);
  CHECK(tcp6.transport == ProxyTransport::stream);
  CHECK(tcp6.source_text() == "[2001:db8::1]:1");
  CHECK(tcp6.destination_text() == "[2001:db8::ff]:65535");
  const auto& s6 = reinterpret_cast<const sockaddr_in6&>(tcp6.source);
  CHECK(s6.sin6_family == AF_INET6);
  CHECK(ntohs(s6.sin6_port) == 1);

  const ProxyHeader udp6 = parse_ok(V2{0x21, 0x22, ipv6_block("::1", "::2", 7, 8)}.build());
  CHECK(udp6.transport == ProxyTransport::dgram);
}

TEST_CASE("v2 UNIX addresses give paths, abstract names and full 108-byte paths", "[proxy][v2]") {
  const ProxyHeader h =
      parse_ok(V2{0x21, 0x31, unix_block("/run/client.sock", "/run/app.sock")}.build());
  CHECK(h.family == AF_UNIX);
  CHECK(h.transport == ProxyTransport::stream);
  CHECK(h.has_addresses());
  CHECK(h.source_text() == "unix:/run/client.sock");
  CHECK(h.destination_text() == "unix:/run/app.sock");
  const auto& un = reinterpret_cast<const sockaddr_un&>(h.destination);
  CHECK(std::string(un.sun_path) == "/run/app.sock");

  const ProxyHeader abstract =
      parse_ok(V2{0x21, 0x32, unix_block(std::string("\0name", 5), std::string(108, 'p'))}.build());
  CHECK(abstract.transport == ProxyTransport::dgram);
  CHECK(abstract.source_text() == "unix:@name");
  CHECK(abstract.destination_text() == "unix:" + std::string(108, 'p'));  // no NUL at all
}

TEST_CASE("v2 LOCAL keeps the socket's addresses and skips whatever follows", "[proxy][v2]") {
  for (const V2& v : {V2{0x20, 0x00, ""}, V2{0x20, 0x11, ipv4_block("1.2.3.4", "5.6.7.8", 1, 2)},
                      V2{0x20, 0x00, "junk that is not a TLV"}, V2{0x20, 0x31, ""}}) {
    const std::string input = v.build();
    const ProxyHeader h = parse_ok(input);
    CHECK(h.command == ProxyCommand::local);
    CHECK_FALSE(h.has_addresses());
    CHECK(h.family == AF_UNSPEC);
    CHECK(h.source.ss_family == AF_UNSPEC);
    CHECK(h.tlvs.empty());
  }
}

TEST_CASE("v2 PROXY with an unspecified family keeps the socket's addresses", "[proxy][v2]") {
  // 0x00 has no address block: TLVs follow directly (HAProxy sends them so).
  const ProxyHeader unspec = parse_ok(V2{0x21, 0x00, tlv(0x02, "example.com")}.build());
  CHECK_FALSE(unspec.has_addresses());
  CHECK(unspec.family == AF_UNSPEC);
  CHECK(unspec.authority == "example.com");
  CHECK(parse_error(V2{0x21, 0x00, "\x02\x00"s}.build()) == E::v2_tlv_truncated);

  // Half-specified pairs have no defined layout: the block is skipped.
  for (int fam : {0x01, 0x02, 0x10, 0x20, 0x30}) {
    const ProxyHeader h = parse_ok(V2{0x21, fam, "\xff\xff\xff whatever"}.build());
    CHECK_FALSE(h.has_addresses());
    CHECK(h.tlvs.empty());
  }
}

TEST_CASE("Every v2 TLV is decoded into its field and kept in wire order", "[proxy][v2][tlv]") {
  const std::string ssl_value = std::string("\x07", 1) + u32(0) + tlv(0x21, "TLSv1.3") +
                                tlv(0x22, "client.example") + tlv(0x23, "TLS_AES_128_GCM_SHA256") +
                                tlv(0x24, "SHA256") + tlv(0x25, "RSA2048") + tlv(0x2A, "later");
  const std::string unique(kProxyUniqueIdMax, 'u');
  V2 v{0x21, 0x11,
       ipv4_block("1.2.3.4", "5.6.7.8", 1000, 2000) + tlv(0x01, "h2") + tlv(0x02, "example.com") +
           tlv(0x04, "") + tlv(0x04, "pad") + tlv(0x05, unique) + tlv(0x20, ssl_value) +
           tlv(0x30, "blue") + tlv(0xE0, std::string("\x00\x01\x02", 3)) + tlv(0xF8, ""),
       true};
  const std::string input = v.build();
  const ProxyHeader h = parse_ok(input);
  CHECK(h.alpn == "h2");
  CHECK(h.authority == "example.com");
  CHECK(h.unique_id == unique);
  CHECK(h.netns == "blue");
  REQUIRE(h.crc32c);
  CHECK(*h.crc32c == crc32c_bitwise(input.substr(0, input.size() - 4) + std::string(4, '\0')));
  REQUIRE(h.ssl);
  CHECK(h.ssl->client == (kProxySslClientSsl | kProxySslClientCertConn | kProxySslClientCertSess));
  CHECK(h.ssl->verify == 0);
  CHECK(h.ssl->version == "TLSv1.3");
  CHECK(h.ssl->cn == "client.example");
  CHECK(h.ssl->cipher == "TLS_AES_128_GCM_SHA256");
  CHECK(h.ssl->sig_alg == "SHA256");
  CHECK(h.ssl->key_alg == "RSA2048");
  REQUIRE(h.ssl->other.size() == 1);
  CHECK(h.ssl->other[0] == ProxyTlv{0x2A, "later"});

  std::vector<int> types;
  for (const auto& t : h.tlvs) types.push_back(t.type);
  CHECK(types == std::vector<int>{0x01, 0x02, 0x04, 0x04, 0x05, 0x20, 0x30, 0xE0, 0xF8, 0x03});
  REQUIRE(h.find_tlv(0xE0));
  CHECK(h.find_tlv(0xE0)->value == std::string("\x00\x01\x02", 3));
  CHECK(h.find_tlv(0x20)->value == ssl_value);
  CHECK(h.find_tlv(0x03)->value == u32(*h.crc32c));  // the value as sent, not zeroed
  CHECK(h.find_tlv(0x99) == nullptr);

  // An SSL TLV with only its fixed part, a failed verification, no sub-TLVs.
  const ProxyHeader bare =
      parse_ok(V2{0x21, 0x00, tlv(0x20, std::string("\x01", 1) + u32(19))}.build());
  REQUIRE(bare.ssl);
  CHECK(bare.ssl->client == kProxySslClientSsl);
  CHECK(bare.ssl->verify == 19);
  CHECK_FALSE(bare.ssl->version);
}

TEST_CASE("A CRC32C that does not match any byte of the header is refused", "[proxy][v2][crc]") {
  const std::string good =
      V2{0x21, 0x21, ipv6_block("::1", "::2", 1, 2) + tlv(0x05, "id-42"), true}.build();
  parse_ok(good);
  // Flip one bit in each byte of the address block and the TLV values, the
  // CRC field included: each is a mismatch. (Flipping a TLV header byte
  // changes the framing instead: another error, or no CRC TLV at all.)
  const std::size_t id_tlv = 16 + 36, crc_tlv = good.size() - 7;
  for (std::size_t i = 16; i < good.size(); ++i) {
    if ((i >= id_tlv && i < id_tlv + 3) || (i >= crc_tlv && i < crc_tlv + 3)) continue;
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    INFO("byte " << i);
    CHECK(parse_error(bad) == E::v2_bad_crc);
  }
  // A checksum that is not 4 bytes, and two checksums.
  CHECK(parse_error(V2{0x21, 0x00, tlv(0x03, "abc")}.build()) == E::v2_tlv_bad_length);
  CHECK(parse_error(V2{0x21, 0x00, tlv(0x03, "abcd"), true}.build()) == E::v2_tlv_duplicate);
}

TEST_CASE("Malformed v2 headers are refused with the error that names the fault", "[proxy][v2]") {
  const std::string a4 = ipv4_block("1.2.3.4", "5.6.7.8", 1, 2);
  const std::pair<std::string, E> cases[] = {
      {V2{0x11, 0x11, a4}.build(), E::v2_unsupported_version},
      {V2{0x31, 0x11, a4}.build(), E::v2_unsupported_version},
      {V2{0x01, 0x11, a4}.build(), E::v2_unsupported_version},
      {V2{0x22, 0x11, a4}.build(), E::v2_bad_command},
      {V2{0x2F, 0x11, a4}.build(), E::v2_bad_command},
      {V2{0x21, 0x41, a4}.build(), E::v2_bad_family},
      {V2{0x21, 0x13, a4}.build(), E::v2_bad_family},
      {V2{0x20, 0xFF, ""}.build(), E::v2_bad_family},  // LOCAL too: the nibbles must be valid
      {V2{0x21, 0x11, a4.substr(0, 11)}.build(), E::v2_address_truncated},
      {V2{0x21, 0x21, std::string(35, '\0')}.build(), E::v2_address_truncated},
      {V2{0x21, 0x31, std::string(215, '\0')}.build(), E::v2_address_truncated},
      {V2{0x21, 0x11, a4 + "\x04"}.build(), E::v2_tlv_truncated},
      {V2{0x21, 0x11, a4 + "\x04\x00"s}.build(), E::v2_tlv_truncated},
      {V2{0x21, 0x11, a4 + "\x04\x00\x02x"s}.build(), E::v2_tlv_truncated},
      {V2{0x21, 0x11, a4 + tlv(0x04, "") + "\x04\x01\x00"s}.build(), E::v2_tlv_truncated},
      {V2{0x21, 0x11, a4 + tlv(0x05, std::string(129, 'u'))}.build(), E::v2_tlv_bad_length},
      {V2{0x21, 0x11, a4 + tlv(0x02, std::string(256, 'a'))}.build(), E::v2_tlv_bad_length},
      {V2{0x21, 0x11, a4 + tlv(0x20, "1234")}.build(), E::v2_tlv_bad_length},
      {V2{0x21, 0x11, a4 + tlv(0x20, "12345\x21\x00\x05x"s)}.build(), E::v2_tlv_truncated},
      {V2{0x21, 0x11, a4 + tlv(0x20, "12345\x22")}.build(), E::v2_tlv_truncated},
      {V2{0x21, 0x11, a4 + tlv(0x01, "h2") + tlv(0x01, "h2")}.build(), E::v2_tlv_duplicate},
      {V2{0x21, 0x11, a4 + tlv(0x02, "a") + tlv(0x02, "b")}.build(), E::v2_tlv_duplicate},
      {V2{0x21, 0x11, a4 + tlv(0x05, "a") + tlv(0x05, "b")}.build(), E::v2_tlv_duplicate},
      {V2{0x21, 0x11, a4 + tlv(0x30, "a") + tlv(0x30, "b")}.build(), E::v2_tlv_duplicate},
      {V2{0x21, 0x11, a4 + tlv(0x20, "12345") + tlv(0x20, "12345")}.build(), E::v2_tlv_duplicate},
      {V2{0x21, 0x11, a4 + tlv(0x20, "12345" + tlv(0x22, "a") + tlv(0x22, "b"))}.build(),
       E::v2_tlv_duplicate},
  };
  for (const auto& [input, expected] : cases) {
    INFO(Catch::Detail::stringify(input));
    CHECK(parse_error(input) == expected);
  }
}

TEST_CASE("A v2 header of 536 bytes is accepted, a longer one is refused after 16 bytes",
          "[proxy][v2]") {
  const std::string a4 = ipv4_block("1.2.3.4", "5.6.7.8", 1, 2);
  const std::size_t pad = kProxyMaxHeaderBytes - kProxyV2FixedBytes - a4.size() - 3;
  const std::string max = V2{0x21, 0x11, a4 + tlv(0x04, std::string(pad, 'n'))}.build();
  REQUIRE(max.size() == kProxyMaxHeaderBytes);
  parse_ok(max);

  const std::string over = V2{0x21, 0x11, a4 + tlv(0x04, std::string(pad + 1, 'n'))}.build();
  const Outcome o = parse(over);
  CHECK(o.status == ProxyParseStatus::failed);
  CHECK(o.error == E::v2_too_long);
  CHECK(o.consumed == kProxyV2FixedBytes);
  // The length field alone decides: 0xFFFF is refused without waiting for the bytes.
  CHECK(parse_error(kSignature + "\x21\x11\xff\xff") == E::v2_too_long);
}

TEST_CASE("A header split at every byte gives the same result as in one piece",
          "[proxy][incremental]") {
  const std::string app = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string a4 = ipv4_block("1.2.3.4", "5.6.7.8", 1, 2);
  const std::vector<std::string> headers = {
      kHaproxyV1, kHaproxyV2, kHaproxyV2Crc, kHaproxyLocal, kHaproxyLocalCrc,
      "PROXY TCP6 2001:db8::1 ::1 65535 0\r\n", "PROXY UNKNOWN\r\n",
      V2{0x21, 0x31, unix_block("/a", "/b")}.build(),
      V2{0x21, 0x11, a4 + tlv(0x20, "\x01\x00\x00\x00\x00"s + tlv(0x21, "TLSv1.2")), true}.build(),
      // refused ones: the error and where it is found must not depend on the split
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n", "PROXY TCPX", "PROXY UNKNOWN\rX",
      "PROXY UNKNOWN " + std::string(120, 'x'), "GET / HTTP/1.1\r\n",
      V2{0x21, 0x11, a4 + tlv(0x01, "a") + tlv(0x01, "b")}.build(),
      V2{0x21, 0x11, a4 + tlv(0x05, "id"), true}.build().substr(0, 40) + "corrupt.......",
      V2{0x31, 0x11, a4}.build(), kSignature + "\x21\x11\x02\x00"s};
  for (const auto& h : headers) {
    check_split_invariance(h);
    check_split_invariance(h + app);
  }
}

TEST_CASE("The bytes after a header are never consumed, however they arrive",
          "[proxy][incremental]") {
  const std::string app = "\x0d\x0aPROXY TCP4 9.9.9.9 9.9.9.9 9 9\r\nrest";
  for (const std::string& header : {kHaproxyV1, kHaproxyV2Crc, kHaproxyLocal}) {
    const std::string input = header + app;
    for (std::size_t k = 0; k <= input.size(); ++k) {
      ProxyHeaderParser p;
      auto r1 = p.feed(std::string_view(input).substr(0, k));
      auto r2 = p.feed(std::string_view(input).substr(k));
      INFO("split at " << k);
      REQUIRE(p.status() == ProxyParseStatus::complete);
      CHECK(r1.consumed + r2.consumed == header.size());
      CHECK(r1.consumed == std::min(k, header.size()));
      CHECK(r2.consumed == (k < header.size() ? header.size() - k : 0));
    }
  }
}

TEST_CASE("An incomplete header asks for more and a finished parser takes nothing",
          "[proxy][incremental]") {
  ProxyHeaderParser p;
  CHECK(p.feed("").status == ProxyParseStatus::need_more);
  const auto r = p.feed("PROXY TCP4 1.2.3.4");
  CHECK(r.status == ProxyParseStatus::need_more);
  CHECK(r.consumed == 18);
  CHECK(p.header_bytes() == 18);
  CHECK_FALSE(p.error());

  ProxyHeaderParser bad;
  CHECK(bad.feed("XYZ").status == ProxyParseStatus::failed);
  const auto again = bad.feed("PROXY UNKNOWN\r\n");
  CHECK(again.status == ProxyParseStatus::failed);
  CHECK(again.consumed == 0);
  CHECK(bad.error() == E::not_proxy_protocol);
}

TEST_CASE("Proxy errors carry the proxy_protocol category and distinct messages", "[proxy]") {
  std::vector<std::string> seen;
  for (int v = 1; v <= static_cast<int>(E::v2_bad_crc); ++v) {
    const std::error_code ec = static_cast<E>(v);
    CHECK(ec.category().name() == std::string("proxy_protocol"));
    CHECK_FALSE(ec.message().empty());
    CHECK(std::find(seen.begin(), seen.end(), ec.message()) == seen.end());
    seen.push_back(ec.message());
  }
  CHECK(make_error_code(E::v2_bad_crc).message() == "v2 header CRC32C mismatch");
}

TEST_CASE("Addresses format as ip:port, [ip6]:port and unix:path", "[proxy]") {
  sockaddr_storage ss{};
  CHECK(ProxyHeader::format_proxy_address(ss).empty());
  auto& in = reinterpret_cast<sockaddr_in&>(ss);
  in.sin_family = AF_INET;
  in.sin_port = htons(8080);
  inet_pton(AF_INET, "203.0.113.9", &in.sin_addr);
  CHECK(ProxyHeader::format_proxy_address(ss) == "203.0.113.9:8080");
  ss = {};
  auto& un = reinterpret_cast<sockaddr_un&>(ss);
  un.sun_family = AF_UNIX;
  CHECK(ProxyHeader::format_proxy_address(ss) == "unix:@");  // abstract, empty name
}

TEST_CASE("The parser's size is what proxy_protocol.h says (x86-64)", "[proxy][memory]") {
  // The figures the header gives for deciding where the parser lives.
  if (sizeof(void*) == 8) {
    CHECK(sizeof(ProxyHeaderParser) <= 1280);
    CHECK(sizeof(ProxyHeader) <= 704);
  }
  WARN("sizeof(ProxyHeaderParser) = " << sizeof(ProxyHeaderParser)
                                      << ", sizeof(ProxyHeader) = " << sizeof(ProxyHeader));
}
