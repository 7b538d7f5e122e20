// The UTF-8 validator alone: every scalar value, every string of up to two
// bytes and every three-byte string after a lead byte against an arithmetic
// reference (ws_utf8_reference.h), including the byte where it fails; random
// text split anywhere; Autobahn's incremental cases; the ASCII fast path at
// every alignment; utf8_prefix.
#include <heartwheel/ws/utf8.h>

#include <catch2/catch.hpp>
#include <random>

#include "ws_utf8_reference.h"

using heartwheel::ws::is_valid_utf8;
using heartwheel::ws::utf8_prefix;
using heartwheel::ws::Utf8Validator;
using ws_test::utf8_reference;

namespace {

// The validator's verdict in the reference's terms: fed one byte at a time,
// where did it fail (size() if never) and did it end complete.
ws_test::Utf8Verdict bytewise(std::string_view s) {
  Utf8Validator v;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!v.feed(s.substr(i, 1))) return {i, false};
  return {s.size(), v.complete()};
}

// Checks `s` against the reference without a Catch assertion per string (the
// exhaustive cases run millions); FAILs with the bytes on the first mismatch.
void require_agrees(std::string_view s) {
  const auto ref = utf8_reference(s);
  const auto got = bytewise(s);
  Utf8Validator whole;
  whole.feed(s);
  if (got.first_invalid == ref.first_invalid && got.complete == ref.complete &&
      whole.complete() == ref.complete && whole.failed() == (ref.first_invalid < s.size()))
    return;
  std::string hex;
  for (unsigned char c : s) hex += Catch::StringMaker<int>::convert(c) + " ";
  FAIL("bytes " << hex << ": validator fails at " << got.first_invalid << " complete "
                << got.complete << ", reference " << ref.first_invalid << " " << ref.complete);
}

std::string encode(std::uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

TEST_CASE("ws utf8: every scalar value is valid and every encoded surrogate is not", "[ws][utf8]") {
  std::size_t wrong = 0;
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    if (is_valid_utf8(encode(cp)) == surrogate) ++wrong;
  }
  CHECK(wrong == 0);
}

TEST_CASE(
    "ws utf8: every string of one or two bytes agrees with the reference, failing byte "
    "included",
    "[ws][utf8]") {
  char s[2];
  for (int a = 0; a < 256; ++a) {
    s[0] = static_cast<char>(a);
    require_agrees(std::string_view(s, 1));
    for (int b = 0; b < 256; ++b) {
      s[1] = static_cast<char>(b);
      require_agrees(std::string_view(s, 2));
    }
  }
}

TEST_CASE("ws utf8: every three-byte string after a multi-byte lead agrees with the reference",
          "[ws][utf8]") {
  char s[3];
  for (int a = 0xC0; a < 256; ++a)
    for (int b = 0; b < 256; ++b)
      for (int c = 0x70; c < 0xD0; ++c) {  // around the continuation range
        s[0] = static_cast<char>(a);
        s[1] = static_cast<char>(b);
        s[2] = static_cast<char>(c);
        require_agrees(std::string_view(s, 3));
      }
}

TEST_CASE("ws utf8: random text split anywhere gets the verdict of the whole", "[ws][utf8]") {
  std::mt19937 rng(7);
  // Mostly valid characters, sometimes a random byte, so failures land
  // everywhere.
  for (int round = 0; round < 3000; ++round) {
    std::string s;
    const int chars = static_cast<int>(rng() % 40);
    for (int i = 0; i < chars; ++i) {
      if (rng() % 20 == 0) {
        s += static_cast<char>(rng());
      } else {
        const std::uint32_t ranges[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
        std::uint32_t cp = rng() % (ranges[rng() % 4] + 1);
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';
        s += encode(cp);
      }
    }
    require_agrees(s);
    Utf8Validator split;
    std::size_t pos = 0;
    while (pos < s.size()) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 5, s.size() - pos);
      split.feed(std::string_view(s).substr(pos, n));
      pos += n;
    }
    REQUIRE(split.complete() == utf8_reference(s).complete);
  }
}

TEST_CASE("ws utf8: Autobahn's incremental cases fail on the same byte", "[ws][utf8]") {
  Utf8Validator v;
  CHECK(v.feed("\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4\xc3\xbc\xc3\xa0\xc3\xa1"));
  CHECK(v.complete());

  v.reset();
  CHECK_FALSE(v.feed("\xF5"));

  // "edited" then a surrogate: fails on its second byte (0xA0), byte 7 overall.
  v.reset();
  CHECK(v.feed("\x65\x64\x69\x74\x65\x64"));
  CHECK(bytewise("\x65\x64\x69\x74\x65\x64\xED\xA0\x80").first_invalid == 7);
  CHECK_FALSE(v.feed("\xED\xA0\x80"));

  // A lead byte at the end of one call, its bad continuation in the next.
  v.reset();
  CHECK(v.feed("\x65\x64\x69\x74\x65\x64\xED"));
  CHECK_FALSE(v.complete());
  CHECK_FALSE(v.failed());
  CHECK_FALSE(v.feed("\xA0\x80"));
  CHECK(v.failed());
  CHECK_FALSE(v.feed("ok"));  // sticky
}

TEST_CASE("ws utf8: the 8-byte ASCII skip finds a bad byte at every offset", "[ws][utf8]") {
  for (std::size_t len = 1; len < 40; ++len)
    for (std::size_t at = 0; at < len; ++at) {
      std::string s(len, 'a');
      s[at] = '\xff';
      INFO("length " << len << ", bad byte at " << at);
      CHECK(bytewise(s).first_invalid == at);
      Utf8Validator v;
      CHECK_FALSE(v.feed(s));
      s[at] = '\xc3';  // a lead byte: fine if followed by a continuation
      if (at + 1 < len) s[at + 1] = '\xa9';
      Utf8Validator w;
      CHECK(w.feed(s));
      CHECK(w.complete() == (at + 1 < len));
    }
}

TEST_CASE("ws utf8: utf8_prefix never cuts a character in two", "[ws][utf8]") {
  const std::string s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";  // a, é, €, 😀: 1+2+3+4 bytes
  CHECK(utf8_prefix(s, 100) == s);
  CHECK(utf8_prefix(s, 1) == "a");
  CHECK(utf8_prefix(s, 2) == "a");
  CHECK(utf8_prefix(s, 3) == "a\xc3\xa9");
  CHECK(utf8_prefix(s, 5) == "a\xc3\xa9");
  CHECK(utf8_prefix(s, 6) == "a\xc3\xa9\xe2\x82\xac");
  CHECK(utf8_prefix(s, 9) == "a\xc3\xa9\xe2\x82\xac");
  CHECK(utf8_prefix(s, 0).empty());
  for (std::size_t n = 0; n <= s.size(); ++n) CHECK(is_valid_utf8(utf8_prefix(s, n)));
}
