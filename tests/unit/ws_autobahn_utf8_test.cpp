// Autobahn|Testsuite section 6 (UTF-8 handling): valid text is echoed,
// invalid text fails the connection with 1007 at the first byte that cannot
// be valid (fail fast), however it is split into frames or reads. The
// vectors of 6.5-6.23 are Markus Kuhn's UTF-8 decoder test cases as Autobahn
// uses them; the expected failing byte comes from the arithmetic reference in
// ws_utf8_reference.h.
#include <catch2/catch.hpp>

#include "ws_harness.h"
#include "ws_utf8_reference.h"

using namespace ws_test;

namespace {

const std::string kKosme =
    bytes({0xce, 0xba, 0xe1, 0xbd, 0xb9, 0xcf, 0x83, 0xce, 0xbc, 0xce, 0xb5});
const std::string kHelloUtf8 =
    "Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4\xc3\xbc\xc3\xa0\xc3\xa1-UTF-8!!";

// One frame per byte of `payload`: text (no FIN), continuations, FIN on the last.
std::vector<std::string> one_frame_per_byte(const std::string& payload) {
  std::vector<std::string> frames;
  for (std::size_t i = 0; i < payload.size(); ++i)
    frames.push_back(
        client_frame(i == 0 ? kText : kCont, payload.substr(i, 1), i + 1 == payload.size()));
  return frames;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}

// One Kuhn vector as one text frame: echoed if valid, else 1007 at the byte
// where the reference says it became invalid (the frame's last byte when the
// text just ends inside a character).
void check_vector(bool valid, const std::string& payload) {
  INFO("payload " << ::Catch::Detail::stringify(payload));
  const Utf8Verdict ref = utf8_reference(payload);
  REQUIRE(ref.complete == valid);  // the vector list and the reference agree
  const std::string wire = client_frame(kText, payload);
  const Run r = run_case({wire});
  if (valid) {
    require_clean(r, {"text:" + shown(payload)}, server_frame(kText, payload));
    return;
  }
  require_failed(r, kCloseInvalidPayload);
  const std::size_t header = wire.size() - payload.size();
  const std::size_t expected =
      ref.first_invalid < payload.size() ? header + ref.first_invalid : wire.size() - 1;
  CHECK(failing_byte(wire) == expected);
}

using Vectors = std::vector<std::pair<bool, std::string>>;

void check_all(const Vectors& vectors) {
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    INFO("sub-case " << i + 1);
    check_vector(vectors[i].first, vectors[i].second);
  }
}

Vectors all_invalid(std::initializer_list<std::string> list) {
  Vectors v;
  for (const auto& s : list) v.emplace_back(false, s);
  return v;
}

}  // namespace

// ---- 6.1 - 6.4 ---------------------------------------------------------------------------

TEST_CASE("ws autobahn 6.1.1 empty text message is echoed", "[ws][autobahn]") {
  require_clean(run_case({client_frame(kText, "")}), {"text:"}, server_frame(kText, ""));
}
TEST_CASE("ws autobahn 6.1.2 text message of three empty fragments is echoed as one",
          "[ws][autobahn]") {
  require_clean(run_case({client_frame(kText, "", false) + client_frame(kCont, "", false) +
                          client_frame(kCont, "", true)}),
                {"text:"}, server_frame(kText, ""));
}
TEST_CASE("ws autobahn 6.1.3 empty, non-empty, empty fragments are echoed as one",
          "[ws][autobahn]") {
  require_clean(run_case({client_frame(kText, "", false) +
                          client_frame(kCont, "middle frame payload", false) +
                          client_frame(kCont, "", true)}),
                {"text:middle frame payload"}, server_frame(kText, "middle frame payload"));
}
TEST_CASE("ws autobahn 6.2.1 valid UTF-8 in one frame is echoed", "[ws][autobahn]") {
  require_clean(run_case({client_frame(kText, kHelloUtf8)}), {"text:" + kHelloUtf8},
                server_frame(kText, kHelloUtf8));
}
TEST_CASE("ws autobahn 6.2.2 valid UTF-8 in two frames split on a character boundary is echoed",
          "[ws][autobahn]") {
  const std::string a = "Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4";
  const std::string b = "\xc3\xbc\xc3\xa0\xc3\xa1-UTF-8!!";
  REQUIRE(a + b == kHelloUtf8);
  require_clean(run_case({client_frame(kText, a, false) + client_frame(kCont, b, true)}),
                {"text:" + kHelloUtf8}, server_frame(kText, kHelloUtf8));
}
TEST_CASE("ws autobahn 6.2.3 valid UTF-8 in one-byte frames (split inside characters) is echoed",
          "[ws][autobahn]") {
  require_clean(run_case({joined(one_frame_per_byte(kHelloUtf8))}), {"text:" + kHelloUtf8},
                server_frame(kText, kHelloUtf8));
}
TEST_CASE("ws autobahn 6.2.4 multi-byte text in one-byte frames is echoed", "[ws][autobahn]") {
  require_clean(run_case(one_frame_per_byte(kKosme)), {"text:" + kKosme},
                server_frame(kText, kKosme));
}

namespace {
const std::string kInvalidText = kKosme + bytes({0xed, 0xa0, 0x80}) + "edited";  // a surrogate
}  // namespace

TEST_CASE("ws autobahn 6.3.1 invalid UTF-8 in one frame fails with 1007", "[ws][autobahn]") {
  const std::string wire = client_frame(kText, kInvalidText);
  require_failed(run_case({wire}), kCloseInvalidPayload);
  CHECK(failing_byte(wire) == 6 + kKosme.size() + 1);  // at 0xA0, not at the end of the frame
}
TEST_CASE("ws autobahn 6.3.2 invalid UTF-8 in one-byte frames fails with 1007", "[ws][autobahn]") {
  const auto frames = one_frame_per_byte(kInvalidText);
  const Run r = run_case(frames);
  require_failed(r, kCloseInvalidPayload);
  // Frame 12 carries the 0xA0 after 0xED: the failure comes with it.
  CHECK(r.steps[kKosme.size()].sent.empty());
  CHECK(r.steps[kKosme.size() + 1].sent == server_close(kCloseInvalidPayload));
}

namespace {
// 6.4.x: kKosme, then 0xF4 0x90 0x80 0x80 (U+110000, out of range: invalid at
// the 0x90, byte 12 of the text), then "edited".
const std::string kPart1 = kKosme;
const std::string kPart2 = bytes({0xf4, 0x90, 0x80, 0x80});
const std::string kPart3 = "edited";
const std::string kFailFast = kPart1 + kPart2 + kPart3;

// The three parts as three frames, or as three chops of one frame.
std::vector<std::string> as_frames(const std::string& a, const std::string& b,
                                   const std::string& c) {
  return {client_frame(kText, a, false), client_frame(kCont, b, false),
          client_frame(kCont, c, true)};
}
std::vector<std::string> as_chops(std::size_t cut1, std::size_t cut2) {
  const std::string wire = client_frame(kText, kFailFast);
  const std::size_t header = wire.size() - kFailFast.size();
  return {wire.substr(0, header + cut1), wire.substr(header + cut1, cut2 - cut1),
          wire.substr(header + cut2)};
}
void check_fail_fast(const Run& r) {
  require_failed(r, kCloseInvalidPayload);
  CHECK(r.steps[0] == Outcome{});  // the valid first part is accepted quietly
  CHECK(r.steps[1].sent == server_close(kCloseInvalidPayload));  // fails before part 3
  CHECK(r.steps[1].closes == 1);
}
}  // namespace

TEST_CASE("ws autobahn 6.4.1 invalid code point in the 2nd of 3 frames fails at that frame",
          "[ws][autobahn]") {
  check_fail_fast(run_case(as_frames(kPart1, kPart2, kPart3)));
}
TEST_CASE("ws autobahn 6.4.2 a 2nd frame holding only the invalid byte fails at that frame",
          "[ws][autobahn]") {
  check_fail_fast(
      run_case(as_frames(kFailFast.substr(0, 12), kFailFast.substr(12, 1), kFailFast.substr(13))));
}
TEST_CASE("ws autobahn 6.4.3 invalid code point in the 2nd of 3 chops of one frame fails there",
          "[ws][autobahn]") {
  check_fail_fast(run_case(as_chops(kPart1.size(), kPart1.size() + kPart2.size())));
}
TEST_CASE("ws autobahn 6.4.4 a 2nd chop holding only the invalid byte fails there",
          "[ws][autobahn]") {
  check_fail_fast(run_case(as_chops(12, 13)));
  const std::string wire = client_frame(kText, kFailFast);
  CHECK(failing_byte(wire) == wire.size() - kFailFast.size() + 12);
}

// ---- 6.5 - 6.23: Kuhn's decoder test vectors -------------------------------------------------

TEST_CASE("ws autobahn 6.5.1-6.5.5 some valid UTF-8 sequences are echoed", "[ws][autobahn]") {
  check_all({{true, "hello\x24world"},
             {true, "hello\xc2\xa2world"},
             {true, "hello\xe2\x82\xacworld"},
             {true, "hello\xf0\xa4\xad\xa2world"},
             {true, kKosme}});
}
TEST_CASE("ws autobahn 6.6.1-6.6.11 prefixes of multi-byte text: echoed if whole, else 1007",
          "[ws][autobahn]") {
  Vectors v;
  for (std::size_t i = 1; i <= kKosme.size(); ++i) {
    const bool boundary = i == 2 || i == 5 || i == 7 || i == 9 || i == 11;
    v.emplace_back(boundary, kKosme.substr(0, i));
  }
  check_all(v);
}
TEST_CASE("ws autobahn 6.7.1-6.7.4 first possible sequence of each length is echoed",
          "[ws][autobahn]") {
  check_all({{true, bytes({0x00})},
             {true, bytes({0xc2, 0x80})},
             {true, bytes({0xe0, 0xa0, 0x80})},
             {true, bytes({0xf0, 0x90, 0x80, 0x80})}});
}
TEST_CASE("ws autobahn 6.8.1-6.8.2 5- and 6-byte sequences fail with 1007", "[ws][autobahn]") {
  check_all(all_invalid(
      {bytes({0xf8, 0x88, 0x80, 0x80, 0x80}), bytes({0xfc, 0x84, 0x80, 0x80, 0x80, 0x80})}));
}
TEST_CASE("ws autobahn 6.9.1-6.9.4 last possible sequence of each length is echoed",
          "[ws][autobahn]") {
  check_all({{true, bytes({0x7f})},
             {true, bytes({0xdf, 0xbf})},
             {true, bytes({0xef, 0xbf, 0xbf})},
             {true, bytes({0xf4, 0x8f, 0xbf, 0xbf})}});
}
TEST_CASE("ws autobahn 6.10.1-6.10.3 sequences beyond U+10FFFF fail with 1007", "[ws][autobahn]") {
  check_all(all_invalid({bytes({0xf7, 0xbf, 0xbf, 0xbf}), bytes({0xfb, 0xbf, 0xbf, 0xbf, 0xbf}),
                         bytes({0xfd, 0xbf, 0xbf, 0xbf, 0xbf, 0xbf})}));
}
TEST_CASE("ws autobahn 6.11.1-6.11.5 boundary conditions: four echoed, U+110000 fails",
          "[ws][autobahn]") {
  check_all({{true, bytes({0xed, 0x9f, 0xbf})},
             {true, bytes({0xee, 0x80, 0x80})},
             {true, bytes({0xef, 0xbf, 0xbd})},
             {true, bytes({0xf4, 0x8f, 0xbf, 0xbf})},
             {false, bytes({0xf4, 0x90, 0x80, 0x80})}});
}
TEST_CASE("ws autobahn 6.12.1-6.12.8 unexpected continuation bytes fail with 1007",
          "[ws][autobahn]") {
  std::string all_continuations;
  for (int b = 0x80; b < 0xbf; ++b) all_continuations.push_back(static_cast<char>(b));
  check_all(
      all_invalid({bytes({0x80}), bytes({0xbf}), bytes({0x80, 0xbf}), bytes({0x80, 0xbf, 0x80}),
                   bytes({0x80, 0xbf, 0x80, 0xbf}), bytes({0x80, 0xbf, 0x80, 0xbf, 0x80}),
                   bytes({0x80, 0xbf, 0x80, 0xbf, 0x80, 0xbf}), all_continuations}));
}
TEST_CASE("ws autobahn 6.13.1-6.13.5 lonely start bytes followed by spaces fail with 1007",
          "[ws][autobahn]") {
  Vectors v;
  for (auto [lo, hi] :
       {std::pair{0xc0, 0xdf}, {0xe0, 0xef}, {0xf0, 0xf7}, {0xf8, 0xfb}, {0xfc, 0xfd}}) {
    std::string s;
    for (int b = lo; b < hi; ++b) s += std::string(1, static_cast<char>(b)) + " ";
    v.emplace_back(false, s);
  }
  check_all(v);
}

namespace {
const std::vector<std::string> kLastContinuationMissing = {bytes({0xc0}),
                                                           bytes({0xe0, 0x80}),
                                                           bytes({0xf0, 0x80, 0x80}),
                                                           bytes({0xf8, 0x80, 0x80, 0x80}),
                                                           bytes({0xfc, 0x80, 0x80, 0x80, 0x80}),
                                                           bytes({0xdf}),
                                                           bytes({0xef, 0xbf}),
                                                           bytes({0xf7, 0xbf, 0xbf}),
                                                           bytes({0xfb, 0xbf, 0xbf, 0xbf}),
                                                           bytes({0xfd, 0xbf, 0xbf, 0xbf, 0xbf})};
}  // namespace

TEST_CASE("ws autobahn 6.14.1-6.14.10 sequences missing their last byte fail with 1007",
          "[ws][autobahn]") {
  Vectors v;
  for (const auto& s : kLastContinuationMissing) v.emplace_back(false, s);
  check_all(v);
}
TEST_CASE("ws autobahn 6.15.1 the incomplete sequences concatenated fail with 1007",
          "[ws][autobahn]") {
  check_all({{false, joined(kLastContinuationMissing)}});
}
TEST_CASE("ws autobahn 6.16.1-6.16.3 impossible bytes fail with 1007", "[ws][autobahn]") {
  check_all(all_invalid({bytes({0xfe}), bytes({0xff}), bytes({0xfe, 0xfe, 0xff, 0xff})}));
}
TEST_CASE("ws autobahn 6.17.1-6.17.5 overlong slashes fail with 1007", "[ws][autobahn]") {
  check_all(all_invalid({bytes({0xc0, 0xaf}), bytes({0xe0, 0x80, 0xaf}),
                         bytes({0xf0, 0x80, 0x80, 0xaf}), bytes({0xf8, 0x80, 0x80, 0x80, 0xaf}),
                         bytes({0xfc, 0x80, 0x80, 0x80, 0x80, 0xaf})}));
}
TEST_CASE("ws autobahn 6.18.1-6.18.5 maximum overlong sequences fail with 1007", "[ws][autobahn]") {
  check_all(all_invalid({bytes({0xc1, 0xbf}), bytes({0xe0, 0x9f, 0xbf}),
                         bytes({0xf0, 0x8f, 0xbf, 0xbf}), bytes({0xf8, 0x87, 0xbf, 0xbf, 0xbf}),
                         bytes({0xfc, 0x83, 0xbf, 0xbf, 0xbf, 0xbf})}));
}
TEST_CASE("ws autobahn 6.19.1-6.19.5 overlong NUL fails with 1007", "[ws][autobahn]") {
  check_all(all_invalid({bytes({0xc0, 0x80}), bytes({0xe0, 0x80, 0x80}),
                         bytes({0xf0, 0x80, 0x80, 0x80}), bytes({0xf8, 0x80, 0x80, 0x80, 0x80}),
                         bytes({0xfc, 0x80, 0x80, 0x80, 0x80, 0x80})}));
}
TEST_CASE("ws autobahn 6.20.1-6.20.7 single UTF-16 surrogates fail with 1007", "[ws][autobahn]") {
  check_all(
      all_invalid({bytes({0xed, 0xa0, 0x80}), bytes({0xed, 0xad, 0xbf}), bytes({0xed, 0xae, 0x80}),
                   bytes({0xed, 0xaf, 0xbf}), bytes({0xed, 0xb0, 0x80}), bytes({0xed, 0xbe, 0x80}),
                   bytes({0xed, 0xbf, 0xbf})}));
}
TEST_CASE("ws autobahn 6.21.1-6.21.8 paired UTF-16 surrogates fail with 1007", "[ws][autobahn]") {
  Vectors v;
  for (auto high : {bytes({0xed, 0xa0, 0x80}), bytes({0xed, 0xad, 0xbf}), bytes({0xed, 0xae, 0x80}),
                    bytes({0xed, 0xaf, 0xbf})})
    for (auto low : {bytes({0xed, 0xb0, 0x80}), bytes({0xed, 0xbf, 0xbf})})
      v.emplace_back(false, high + low);
  check_all(v);
}
TEST_CASE("ws autobahn 6.22.1-6.22.34 noncharacters are valid UTF-8 and echoed", "[ws][autobahn]") {
  Vectors v = {{true, bytes({0xef, 0xbf, 0xbe})}, {true, bytes({0xef, 0xbf, 0xbf})}};
  for (int z1 : {0xf0, 0xf1, 0xf2, 0xf3, 0xf4})
    for (int z2 : {0x8f, 0x9f, 0xaf, 0xbf}) {
      if (z1 == 0xf4 && z2 != 0x8f) continue;  // above U+10FFFF
      for (int z3 : {0xbe, 0xbf}) {
        if (z1 == 0xf0 && z2 == 0x8f) continue;  // overlong
        v.emplace_back(true, bytes({z1, z2, 0xbf, z3}));
      }
    }
  CHECK(v.size() == 34);
  check_all(v);
}
TEST_CASE("ws autobahn 6.23.1-6.23.7 Unicode specials are echoed", "[ws][autobahn]") {
  Vectors v;
  for (int last = 0xb9; last <= 0xbf; ++last) v.emplace_back(true, bytes({0xef, 0xbf, last}));
  check_all(v);
}
