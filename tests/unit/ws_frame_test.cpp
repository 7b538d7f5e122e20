// Frame encoding (RFC 6455's examples byte for byte), masking, close payloads
// and the frame parser: header fields, length forms, the byte at which each
// rule fails, and a seeded randomized split test.
#include <heartwheel/ws/frame.h>
#include <heartwheel/ws/frame_parser.h>

#include <catch2/catch.hpp>
#include <random>
#include <stdexcept>

#include "ws_harness.h"

using namespace ws_test;

TEST_CASE("ws frame: the RFC 6455 5.7 examples encode byte for byte", "[ws][frame]") {
  CHECK(encode_frame(Opcode::text, "Hello") == bytes({0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}));
  std::string masked;
  append_masked_frame(masked, Opcode::text, "Hello", {0x37, 0xfa, 0x21, 0x3d});
  CHECK(masked == bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}));
  CHECK(encode_frame(Opcode::text, "Hel", false) == bytes({0x01, 0x03, 0x48, 0x65, 0x6c}));
  CHECK(encode_frame(Opcode::continuation, "lo") == bytes({0x80, 0x02, 0x6c, 0x6f}));
  CHECK(encode_frame(Opcode::ping, "Hello") == bytes({0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}));
  std::string pong;
  append_masked_frame(pong, Opcode::pong, "Hello", {0x37, 0xfa, 0x21, 0x3d});
  CHECK(pong == bytes({0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}));
  const std::string b256(256, 'x');
  CHECK(encode_frame(Opcode::binary, b256) == bytes({0x82, 0x7e, 0x01, 0x00}) + b256);
  const std::string b64k(65536, 'x');
  CHECK(encode_frame(Opcode::binary, b64k) == bytes({0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}) + b64k);
}

TEST_CASE("ws frame: encoders pick the shortest length form at every boundary", "[ws][frame]") {
  for (std::size_t n : {0, 1, 125, 126, 127, 65535, 65536, 70000}) {
    INFO("payload " << n);
    const std::string p(n, 'a');
    CHECK(encode_frame(Opcode::binary, p) == server_frame(Opcode::binary, p));
    std::string masked;
    append_masked_frame(masked, Opcode::binary, p, kTestMask);
    CHECK(masked == client_frame(Opcode::binary, p));
    CHECK(frame_header_size(n, false) + n == encode_frame(Opcode::binary, p).size());
    CHECK(frame_header_size(n, true) + n == masked.size());
  }
}

TEST_CASE("ws frame: control frames above 125 bytes or fragmented are refused with a reason",
          "[ws][frame]") {
  std::string out;
  CHECK_THROWS_WITH(append_frame(out, Opcode::ping, std::string(126, 'a')),
                    Catch::Contains("at most 125 bytes"));
  CHECK_THROWS_AS(append_masked_frame(out, Opcode::close, std::string(200, 'a'), kTestMask),
                  std::invalid_argument);
  CHECK_THROWS_WITH(encode_frame(Opcode::pong, "a", false),
                    Catch::Contains("cannot be fragmented"));
  CHECK(out.empty());  // nothing half-written
  CHECK_NOTHROW(append_frame(out, Opcode::ping, std::string(125, 'a')));
}

TEST_CASE("ws frame: a shared frame holds the same bytes as encode_frame", "[ws][frame]") {
  const SharedFrame f = encode_shared(Opcode::text, "publication");
  REQUIRE(f);
  CHECK(*f == encode_frame(Opcode::text, "publication"));
  const SharedFrame copy = f;  // what a second subscriber holds: the same buffer
  CHECK(copy.get() == f.get());
  CHECK(f.use_count() == 2);
}

TEST_CASE(
    "ws frame: close payloads carry the code big-endian and cut long reasons on a "
    "character boundary",
    "[ws][frame]") {
  CHECK(close_payload(1000) == bytes({0x03, 0xe8}));
  CHECK(close_payload(4001, "bye") == bytes({0x0f, 0xa1}) + "bye");
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";  // 200 bytes of two-byte characters
  const std::string p = close_payload(1000, accents);
  CHECK(p.size() == 2 + 122);  // 123 would split the 62nd character
  CHECK(p.substr(2) == accents.substr(0, 122));
  CHECK(close_payload(1000, std::string(200, 'a')).size() == 125);
}

TEST_CASE("ws frame: valid close codes are exactly 1000-1003, 1007-1014 and 3000-4999",
          "[ws][frame]") {
  int valid = 0;
  for (int code = 0; code <= 65535; ++code)
    valid += is_valid_close_code(static_cast<std::uint16_t>(code)) ? 1 : 0;
  CHECK(valid == 4 + 8 + 2000);
  for (std::uint16_t c : {1000, 1003, 1007, 1011, 3000, 4999}) CHECK(is_valid_close_code(c));
  // IANA registered 1012 (service restart: our servers' restart drain sends
  // it), 1013 (try again later) and 1014 (bad gateway) after RFC 6455, which
  // leaves 1000-2999 to IANA (7.4.2).
  for (std::uint16_t c : {kCloseServiceRestart, kCloseTryAgainLater, kCloseBadGateway})
    CHECK(is_valid_close_code(c));
  // 1015 (a TLS failure) stays invalid: RFC 6455 7.4.1 says it is never sent.
  for (std::uint16_t c : {0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535})
    CHECK_FALSE(is_valid_close_code(c));
}

TEST_CASE("ws frame: masking in pieces at any offset equals masking at once", "[ws][frame]") {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::string data(rng() % 64, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    const MaskKey key = {static_cast<std::uint8_t>(rng()), static_cast<std::uint8_t>(rng()),
                         static_cast<std::uint8_t>(rng()), static_cast<std::uint8_t>(rng())};
    std::string expected = data;
    for (std::size_t i = 0; i < expected.size(); ++i)
      expected[i] = static_cast<char>(expected[i] ^ static_cast<char>(key[i % 4]));
    std::string pieces = data;
    std::size_t pos = 0;
    while (pos < pieces.size()) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 13, pieces.size() - pos);
      apply_mask(pieces.data() + pos, n, key, pos);
      pos += n;
    }
    REQUIRE(pieces == expected);
  }
}

// ---- the parser ----------------------------------------------------------------------------

namespace {

struct Parsed {
  FrameHeader header;
  std::string payload;
};

// Parses exactly one frame from `wire`; fails the test otherwise.
Parsed parse_one(const std::string& wire, Role role = Role::server) {
  FrameParser p(role);
  std::string_view in = wire;
  REQUIRE(p.read_header(in) == FrameParser::Status::header);
  Parsed out{p.header(), {}};
  p.read_payload(in, out.payload);
  CHECK(p.remaining() == 0);
  CHECK(in.empty());
  return out;
}

// Feeds `wire` byte by byte; returns the index of the byte that made the
// parser fail, or wire.size().
std::size_t parser_failing_byte(const std::string& wire, Role role = Role::server) {
  FrameParser p(role);
  std::string sink;
  bool frame_open = false;
  for (std::size_t i = 0; i < wire.size(); ++i) {
    std::string_view in(wire.data() + i, 1);
    while (!in.empty() || frame_open) {
      if (!frame_open) {
        const auto s = p.read_header(in);
        if (s == FrameParser::Status::error) return i;
        if (s == FrameParser::Status::need_more) break;
        frame_open = true;
      }
      p.read_payload(in, sink);
      if (p.remaining() > 0) break;
      frame_open = false;
    }
  }
  return wire.size();
}

}  // namespace

TEST_CASE("ws parser: a masked client frame yields its header and unmasked payload",
          "[ws][parser]") {
  const Parsed f =
      parse_one(bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}));
  CHECK(f.header.fin);
  CHECK(f.header.rsv == 0);
  CHECK(f.header.opcode == Opcode::text);
  CHECK(f.header.masked);
  CHECK(f.header.mask == MaskKey{0x37, 0xfa, 0x21, 0x3d});
  CHECK(f.header.payload_length == 5);
  CHECK(f.payload == "Hello");
}

TEST_CASE("ws parser: lengths in a longer form than needed are accepted", "[ws][parser]") {
  // RFC 6455 asks senders for the shortest form; Autobahn does not test
  // receivers on it and common servers accept the longer ones, as we do.
  CHECK(parse_one(encode_raw({0x82, "12345", true, 126})).payload == "12345");
  CHECK(parse_one(encode_raw({0x82, "12345", true, 127})).payload == "12345");
  CHECK(parse_one(encode_raw({0x82, std::string(300, 'z'), true, 127})).header.payload_length ==
        300);
}

TEST_CASE("ws parser: each rule fails at the first byte that breaks it", "[ws][parser]") {
  // byte 0: RSV bits, reserved opcodes, fragmented control frames, sequence
  CHECK(parser_failing_byte(client_frame(Opcode::text, "x", true, 4)) == 0);
  CHECK(parser_failing_byte(encode_raw({0x83, "x"})) == 0);
  CHECK(parser_failing_byte(encode_raw({0x8b, "x"})) == 0);
  CHECK(parser_failing_byte(client_frame(Opcode::ping, "x", false)) == 0);
  CHECK(parser_failing_byte(client_frame(Opcode::continuation, "x")) == 0);
  // byte 1: masking by role, control frame size
  CHECK(parser_failing_byte(server_frame(Opcode::text, "x")) == 1);
  CHECK(parser_failing_byte(client_frame(Opcode::text, "x"), Role::client) == 1);
  CHECK(parser_failing_byte(encode_raw({0x89, std::string(126, 'p')})) == 1);
  CHECK(parser_failing_byte(encode_raw({0x89, "p", true, 126})) == 1);  // even if small
  // the 64-bit length's top bit, once the length is complete (before the mask)
  const std::string huge = bytes({0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4});
  CHECK(parser_failing_byte(huge) == 9);
  // and a good frame does not fail at all
  const std::string good = client_frame(Opcode::text, "fine");
  CHECK(parser_failing_byte(good) == good.size());
}

TEST_CASE("ws parser: the error is sticky and says why", "[ws][parser]") {
  FrameParser p(Role::server);
  const std::string bad = encode_raw({0x83, "x"});
  std::string_view in = bad;
  CHECK(p.read_header(in) == FrameParser::Status::error);
  CHECK(p.failed());
  CHECK(std::string(p.error()) == "reserved opcode");
  const std::string good = client_frame(Opcode::text, "x");
  std::string_view in2 = good;
  CHECK(p.read_header(in2) == FrameParser::Status::error);
}

TEST_CASE("ws parser: an allowed RSV bit passes, the others still fail", "[ws][parser]") {
  FrameParser p(Role::server, 0b100);  // RSV1, as permessage-deflate would define it
  const std::string wire = client_frame(Opcode::text, "x", true, 0b100);
  std::string_view in = wire;
  REQUIRE(p.read_header(in) == FrameParser::Status::header);
  CHECK(p.header().rsv == 0b100);
  FrameParser q(Role::server, 0b100);
  const std::string rsv2 = client_frame(Opcode::text, "x", true, 0b010);
  std::string_view in2 = rsv2;
  CHECK(q.read_header(in2) == FrameParser::Status::error);
}

TEST_CASE("ws parser: a client parser reads unmasked server frames", "[ws][parser]") {
  const Parsed f = parse_one(server_frame(Opcode::binary, "abc"), Role::client);
  CHECK_FALSE(f.header.masked);
  CHECK(f.payload == "abc");
}

TEST_CASE("ws parser: random frame streams split anywhere parse the same as whole",
          "[ws][parser]") {
  std::mt19937 rng(2024);
  for (int round = 0; round < 20; ++round) {
    // A valid stream: messages of 1-3 fragments with control frames between.
    std::string wire;
    std::vector<std::pair<std::uint8_t, std::string>> expected;  // byte 0, payload
    for (int m = 0; m < 6; ++m) {
      const int fragments = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < fragments; ++i) {
        const std::size_t sizes[] = {0, 1, 125, 126, 127, 300, 65536};
        std::string payload(sizes[rng() % 7], static_cast<char>('a' + m));
        const Opcode op =
            i == 0 ? (rng() % 2 ? Opcode::text : Opcode::binary) : Opcode::continuation;
        const auto b0 = static_cast<std::uint8_t>((i + 1 == fragments ? 0x80 : 0) |
                                                  static_cast<std::uint8_t>(op));
        wire +=
            encode_raw({b0, payload, true, -1, MaskKey{static_cast<std::uint8_t>(rng()), 1, 2, 3}});
        expected.emplace_back(b0, payload);
        if (rng() % 3 == 0) {
          wire += client_frame(Opcode::ping, "p" + std::to_string(i));
          expected.emplace_back(0x89, "p" + std::to_string(i));
        }
      }
    }
    FrameParser p(Role::server);
    std::vector<std::pair<std::uint8_t, std::string>> got;
    bool frame_open = false;
    std::size_t pos = 0;
    while (pos < wire.size()) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 100, wire.size() - pos);
      std::string_view in(wire.data() + pos, n);
      pos += n;
      while (!in.empty() || frame_open) {
        if (!frame_open) {
          const auto s = p.read_header(in);
          REQUIRE(s != FrameParser::Status::error);
          if (s == FrameParser::Status::need_more) break;
          const FrameHeader& h = p.header();
          got.emplace_back(
              static_cast<std::uint8_t>((h.fin ? 0x80 : 0) | static_cast<std::uint8_t>(h.opcode)),
              std::string());
          frame_open = true;
        }
        p.read_payload(in, got.back().second);
        if (p.remaining() > 0) break;
        frame_open = false;
      }
    }
    REQUIRE(got == expected);
    CHECK_FALSE(p.in_message());
  }
}
