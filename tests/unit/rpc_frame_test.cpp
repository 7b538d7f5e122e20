// The RPC frame codec: exact bytes, frames split and coalesced across reads,
// the maximum length, bad headers, and a seeded randomized split test.
#include <heartwheel/common/error.h>
#include <heartwheel/rpc/frame.h>

#include <catch2/catch.hpp>

#include <random>
#include <sstream>
#include <string>
#include <vector>

using heartwheel::errc;
using namespace heartwheel::rpc;

namespace {

struct Decoded {
  FrameType type;
  std::uint64_t id;
  std::string payload;
  bool operator==(const Decoded&) const = default;
};

// Feeds `chunks` in order and collects every frame (copied).
std::vector<Decoded> decode_all(FrameDecoder& d, const std::vector<std::string>& chunks,
                                std::error_code& ec) {
  std::vector<Decoded> out;
  for (const auto& chunk : chunks) {
    std::string_view in = chunk;
    while (auto f = d.next(in, ec)) out.push_back({f->type, f->id, std::string(f->payload)});
    if (ec) return out;
    REQUIRE(in.empty());  // without an error every byte is consumed
  }
  return out;
}

std::string bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

}  // namespace

TEST_CASE("A frame is encoded as length, type, id and payload, big-endian", "[rpc][frame]") {
  const std::string f = encode_frame(FrameType::request, 0x0102030405060708ULL, "hi");
  CHECK(f == bytes({0, 0, 0, 11, 1, 1, 2, 3, 4, 5, 6, 7, 8}) + "hi");
  CHECK(encode_frame(FrameType::pong, 1, "").size() == kHeaderSize);
}

TEST_CASE("A whole frame decodes without being copied into the decoder", "[rpc][frame]") {
  FrameDecoder d;
  const std::string wire = encode_frame(FrameType::response, 42, "payload");
  std::string_view in = wire;
  std::error_code ec;
  auto f = d.next(in, ec);
  REQUIRE(f);
  CHECK(!ec);
  CHECK(f->type == FrameType::response);
  CHECK(f->id == 42);
  CHECK(f->payload == "payload");
  CHECK(f->payload.data() == wire.data() + kHeaderSize);  // a view into the input
  CHECK(in.empty());
  CHECK(d.buffered() == 0);
}

TEST_CASE("Coalesced frames in one read come out one by one", "[rpc][frame]") {
  std::string wire;
  append_frame(wire, FrameType::request, 1, "a");
  append_frame(wire, FrameType::ping, 2, ping_payload(heartwheel::TimePoint(std::chrono::seconds(5))));
  append_frame(wire, FrameType::error, 3, "boom");
  FrameDecoder d;
  std::error_code ec;
  const auto frames = decode_all(d, {wire}, ec);
  REQUIRE(!ec);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0] == Decoded{FrameType::request, 1, "a"});
  CHECK(frames[1].type == FrameType::ping);
  CHECK(ping_sent_at(frames[1].payload) == heartwheel::TimePoint(std::chrono::seconds(5)));
  CHECK(frames[2] == Decoded{FrameType::error, 3, "boom"});
}

TEST_CASE("A frame split at every byte boundary decodes the same", "[rpc][frame]") {
  const std::string wire = encode_frame(FrameType::request, 7, "split me");
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    FrameDecoder d;
    std::error_code ec;
    const auto frames = decode_all(d, {wire.substr(0, cut), wire.substr(cut)}, ec);
    INFO("cut at " << cut);
    REQUIRE(!ec);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0] == Decoded{FrameType::request, 7, "split me"});
    CHECK(d.buffered() == 0);
  }
}

TEST_CASE("A frame fed one byte at a time decodes, then the decoder is empty", "[rpc][frame]") {
  std::string wire = encode_frame(FrameType::pong, 9, "12345678");
  wire += encode_frame(FrameType::response, 10, "");
  std::vector<std::string> chunks;
  for (char c : wire) chunks.emplace_back(1, c);
  FrameDecoder d;
  std::error_code ec;
  const auto frames = decode_all(d, chunks, ec);
  REQUIRE(!ec);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0] == Decoded{FrameType::pong, 9, "12345678"});
  CHECK(frames[1] == Decoded{FrameType::response, 10, ""});
  CHECK(d.buffered() == 0);
}

TEST_CASE("A frame at the maximum length is accepted and one byte more is frame_too_large",
          "[rpc][frame]") {
  const std::size_t max = 64;
  {
    FrameDecoder d(max);
    std::error_code ec;
    const auto frames =
        decode_all(d, {encode_frame(FrameType::request, 1, std::string(max - kMinFrameLength, 'x'))}, ec);
    CHECK(!ec);
    CHECK(frames.size() == 1);
  }
  FrameDecoder d(max);
  std::error_code ec;
  // Only the 4-byte length arrives: rejected before any payload is buffered.
  const std::string wire = encode_frame(FrameType::request, 1, std::string(max - kMinFrameLength + 1, 'x'));
  std::string_view in = std::string_view(wire).substr(0, 4);
  CHECK(!d.next(in, ec));
  CHECK(ec == errc::frame_too_large);
  CHECK(d.failed());
  // The error is sticky: later bytes, even a good frame, are refused.
  const std::string good = encode_frame(FrameType::request, 2, "");
  std::string_view in2 = good;
  CHECK(!d.next(in2, ec));
  CHECK(ec == errc::frame_too_large);
}

TEST_CASE("The default maximum is 1 MiB and a 4 GiB length is refused at once", "[rpc][frame]") {
  FrameDecoder d;
  CHECK(d.max_frame_length() == kDefaultMaxFrameLength);
  const std::string header = bytes({0xff, 0xff, 0xff, 0xff});
  std::string_view in = header;
  std::error_code ec;
  CHECK(!d.next(in, ec));
  CHECK(ec == errc::frame_too_large);
  CHECK(d.buffered() == 0);
}

TEST_CASE("An unknown frame type is a protocol error, also when the type byte arrives alone",
          "[rpc][frame]") {
  for (int type : {0, 6, 255}) {
    std::string wire = encode_frame(FrameType::request, 1, "x");
    wire[kLengthFieldSize] = static_cast<char>(type);
    INFO("type " << type);
    {
      FrameDecoder d;
      std::error_code ec;
      decode_all(d, {wire}, ec);
      CHECK(ec == errc::protocol_error);
    }
    FrameDecoder d;
    std::error_code ec;
    decode_all(d, {wire.substr(0, 4), wire.substr(4, 1)}, ec);
    CHECK(ec == errc::protocol_error);  // refused before the id and payload came
  }
}

TEST_CASE("A length below 9 is a protocol error", "[rpc][frame]") {
  for (int len : {0, 1, 8}) {
    FrameDecoder d;
    std::error_code ec;
    decode_all(d, {bytes({0, 0, 0, len, 1})}, ec);
    INFO("length " << len);
    CHECK(ec == errc::protocol_error);
  }
}

TEST_CASE("A maximum below the header size is a configuration error", "[rpc][frame]") {
  CHECK_THROWS_AS(FrameDecoder(8), std::invalid_argument);
  CHECK_NOTHROW(FrameDecoder(kMinFrameLength));
}

TEST_CASE("A ping payload carries the send time and rejects other sizes", "[rpc][frame]") {
  const heartwheel::TimePoint t(std::chrono::nanoseconds(0x1122334455667788LL));
  CHECK(ping_sent_at(ping_payload(t)) == t);
  CHECK(!ping_sent_at("short"));
  CHECK(std::string(to_string(FrameType::error)) == "error");
  CHECK(std::string(to_string(static_cast<FrameType>(9))) == "invalid");
}

TEST_CASE("Random frames cut at random points decode to the same frames (seeded)",
          "[rpc][frame][fuzz]") {
  const std::uint32_t seed = 20261122;
  std::mt19937 rng(seed);
  for (int round = 0; round < 200; ++round) {
    std::vector<Decoded> sent;
    std::string wire;
    const int n = std::uniform_int_distribution<int>(1, 20)(rng);
    for (int i = 0; i < n; ++i) {
      const auto type = static_cast<FrameType>(std::uniform_int_distribution<int>(1, 5)(rng));
      const std::uint64_t id = rng() * 0x100000001ULL;
      std::string payload(std::uniform_int_distribution<std::size_t>(0, 300)(rng), '\0');
      for (auto& c : payload) c = static_cast<char>(rng());
      append_frame(wire, type, id, payload);
      sent.push_back({type, id, payload});
    }
    std::vector<std::string> chunks;
    for (std::size_t pos = 0; pos < wire.size();) {
      const std::size_t len = std::min(wire.size() - pos, std::uniform_int_distribution<std::size_t>(1, 64)(rng));
      chunks.push_back(wire.substr(pos, len));
      pos += len;
    }
    FrameDecoder d(kMinFrameLength + 300);
    std::error_code ec;
    const auto got = decode_all(d, chunks, ec);
    INFO("seed " << seed << " round " << round << " frames " << n << " chunks " << chunks.size());
    REQUIRE(!ec);
    REQUIRE(got == sent);
    CHECK(d.buffered() == 0);
  }
}
