// A second, arithmetic UTF-8 checker for the tests: decodes code points and
// asks whether any completion of the bytes seen so far could still be valid,
// instead of walking a state table like heartwheel/ws/utf8.cpp does.
#pragma once

#include <cstdint>
#include <string_view>

namespace ws_test {

struct Utf8Verdict {
  std::size_t first_invalid;  // index of the first byte no valid text can continue; size() if none
  bool complete;              // no invalid byte and the text ends on a character boundary
};

// Could a sequence of `length` bytes whose first `seen` bits-so-far give `cp`
// still encode a valid scalar value? The completions cover one contiguous
// range of code points; it must meet [min, max] of that length outside the
// surrogates.
inline bool completion_possible(std::uint32_t cp, int length, int remaining) {
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  static constexpr std::uint32_t kMax[] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  const std::uint32_t lo_all = cp << (6 * remaining);
  const std::uint32_t hi_all = lo_all | ((1u << (6 * remaining)) - 1);
  const std::uint32_t lo = lo_all > kMin[length] ? lo_all : kMin[length];
  const std::uint32_t hi = hi_all < kMax[length] ? hi_all : kMax[length];
  if (lo > hi) return false;
  return lo < 0xD800 || hi > 0xDFFF;  // not entirely inside the surrogates
}

inline Utf8Verdict utf8_reference(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<std::uint8_t>(s[i]);
    const int length = b < 0x80             ? 1
                       : (b & 0xE0) == 0xC0 ? 2
                       : (b & 0xF0) == 0xE0 ? 3
                       : (b & 0xF8) == 0xF0 ? 4
                                            : 0;
    if (length == 0) return {i, false};
    std::uint32_t cp = length == 1 ? b : (b & (0x7Fu >> length));
    if (!completion_possible(cp, length, length - 1)) return {i, false};
    for (int k = 1; k < length; ++k) {
      if (i + k >= s.size()) return {s.size(), false};  // fine so far, but cut short
      const auto c = static_cast<std::uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return {i + k, false};
      cp = (cp << 6) | (c & 0x3F);
      if (!completion_possible(cp, length, length - 1 - k)) return {i + k, false};
    }
    i += static_cast<std::size_t>(length);
  }
  return {s.size(), true};
}

}  // namespace ws_test
