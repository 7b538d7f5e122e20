// Fuzz target: the incremental UTF-8 validator (heartwheel/ws/utf8.h).
// Input: plan byte + stream (common/fuzz_input.h).
//
// A reference written here the plain way (decode each character, then check
// it) says where the stream first stops being the beginning of any valid
// UTF-8 text, and whether it is complete, valid text. Then:
// - fed in the planned pieces, Utf8Validator::feed returns false exactly
//   from the piece holding that byte on ("fail fast": at the first byte no
//   valid continuation could follow, not at the end of the character);
// - fed byte by byte, it fails exactly at that byte, and complete() holds
//   exactly after the bytes that end a character of a valid prefix;
// - is_valid_utf8 of the whole (one piece) agrees with the reference;
// - utf8_prefix(stream, k), for k taken from the stream, is a prefix of at
//   most k bytes and at least k - 3, and for valid text the longest valid
//   prefix of at most k bytes.
#include <heartwheel/ws/utf8.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/fuzz_input.h"

using heartwheel::ws::is_valid_utf8;
using heartwheel::ws::utf8_prefix;
using heartwheel::ws::Utf8Validator;

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// How many bytes a character with this first byte has: 1-4 by the bit
// pattern of RFC 3629's table, 0 for a continuation byte or 11111xxx.
int sequence_length(std::uint8_t b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 0;
}

// Whether some valid code point of `length` bytes has an encoding that
// starts with the `have` bytes at `p` (pattern bits already checked): the
// code points such a prefix can still become are [low, high]; the valid
// ones of that length are [kMin, kMax] without the surrogates.
bool can_complete(const std::uint8_t* p, int have, int length) {
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  static constexpr std::uint32_t kMax[] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  static constexpr std::uint8_t kLeadBits[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  std::uint32_t value = p[0] & kLeadBits[length];
  for (int i = 1; i < have; ++i) value = value << 6 | (p[i] & 0x3F);
  const int free_bits = 6 * (length - have);
  const std::uint32_t low = value << free_bits;
  const std::uint32_t high = low | ((std::uint32_t{1} << free_bits) - 1);
  const std::uint32_t lo = std::max(low, kMin[length]), hi = std::min(high, kMax[length]);
  if (lo > hi) return false;
  return !(lo >= 0xD800 && hi <= 0xDFFF);  // not only surrogates
}

struct Reference {
  std::size_t first_error = kNone;  // index of the first byte that cannot be valid
  bool complete = true;             // ends on a character boundary (when no error)
  std::vector<bool> boundary;       // boundary[i]: a character ends after byte i
};

Reference reference(std::string_view s) {
  Reference r;
  r.boundary.assign(s.size(), false);
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  std::size_t i = 0;
  while (i < s.size()) {
    const int length = sequence_length(p[i]);
    if (length == 0 || !can_complete(p + i, 1, length)) {
      r.first_error = i;
      return r;
    }
    int have = 1;
    for (; have < length && i + have < s.size(); ++have) {
      const std::uint8_t c = p[i + have];
      if ((c & 0xC0) != 0x80 || !can_complete(p + i, have + 1, length)) {
        r.first_error = i + have;
        return r;
      }
    }
    if (have < length) {  // the stream ends inside this character
      r.complete = false;
      return r;
    }
    i += length;
    r.boundary[i - 1] = true;
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view stream = fuzz::as_view(data + 1, size - 1);
  const Reference ref = reference(stream);
  const bool valid = ref.first_error == kNone && ref.complete;

  FUZZ_CHECK(is_valid_utf8(stream) == valid);

  // In the planned pieces.
  Utf8Validator split;
  fuzz::Reads reads(data[0], stream);
  std::string_view piece;
  std::size_t fed = 0;
  while (reads.next(piece)) {
    const bool ok = split.feed(piece);
    fed += piece.size();
    FUZZ_CHECK(ok == (ref.first_error == kNone || ref.first_error >= fed));
    FUZZ_CHECK(split.failed() == !ok);
  }
  FUZZ_CHECK(split.complete() == valid);

  // Byte by byte.
  Utf8Validator bytes;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const bool ok = bytes.feed(stream.substr(i, 1));
    FUZZ_CHECK(ok == (ref.first_error == kNone || ref.first_error > i));
    if (ok) FUZZ_CHECK(bytes.complete() == ref.boundary[i]);
  }
  bytes.reset();
  FUZZ_CHECK(bytes.complete() && !bytes.failed());

  // utf8_prefix at a few cut points taken from the stream itself.
  for (std::size_t k = 0; k < 4 && k < stream.size(); ++k) {
    const std::size_t max = static_cast<std::uint8_t>(stream[k]) % (stream.size() + 2);
    const std::string_view cut = utf8_prefix(stream, max);
    FUZZ_CHECK(cut.data() == stream.data());
    FUZZ_CHECK(cut.size() <= max || cut.size() == stream.size());
    if (max >= stream.size()) {
      FUZZ_CHECK(cut.size() == stream.size());
      continue;
    }
    FUZZ_CHECK(cut.size() + 3 >= max);
    if (valid) {
      FUZZ_CHECK(is_valid_utf8(cut));
      std::size_t longest = 0;  // the last character boundary at or before max
      for (std::size_t i = 0; i < max; ++i)
        if (ref.boundary[i]) longest = i + 1;
      FUZZ_CHECK(cut.size() == longest);
    }
  }
  return 0;
}
