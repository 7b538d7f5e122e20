// heartwheel/ws/utf8.h - an incremental UTF-8 validator (RFC 3629).
//
// What it is
//   A byte-at-a-time deterministic automaton that accepts exactly the
//   well-formed UTF-8 of RFC 3629: no overlong forms, no UTF-16 surrogates
//   (U+D800..U+DFFF), nothing above U+10FFFF, no 0xC0/0xC1/0xF5..0xFF bytes.
//   It carries its state across calls, so a text message split over frames,
//   reads or bytes at arbitrary points validates exactly as the whole would;
//   and it fails at the first byte that no valid continuation could follow
//   ("fail fast", Autobahn|Testsuite 6.4.x), not at the end of the message.
//   Noncharacters (U+FFFE, U+FDD0, ...) are valid UTF-8 and are accepted.
//
// Cost
//   One load, shift and mask per byte (a 256 x 64-bit shift table, 2 KiB
//   shared by all validators); runs of ASCII are skipped eight bytes at a
//   time. The state is one byte; no allocation.
//
// Threads: a validator is a value; distinct validators are independent. The
// tables are constant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace heartwheel::ws {

class Utf8Validator {
 public:
  // Validates the next bytes of the stream. Returns false if any byte so far
  // (in this call or an earlier one since reset()) was invalid; the failure is
  // sticky until reset(). Returning true does not mean the stream ends on a
  // character boundary: see complete().
  bool feed(std::string_view bytes) noexcept;

  // True when no invalid byte was seen and the bytes so far end on a
  // character boundary (an empty stream is complete).
  bool complete() const noexcept { return state_ == kAccept; }
  // True once an invalid byte was seen.
  bool failed() const noexcept { return state_ == kReject; }
  // Starts a new stream.
  void reset() noexcept { state_ = kAccept; }

 private:
  // States are stored as bit offsets into utf8.cpp's shift table (state * 6).
  static constexpr std::uint8_t kAccept = 0;  // state 0
  static constexpr std::uint8_t kReject = 6;  // state 1, sticky
  std::uint8_t state_ = kAccept;
};

// True when `bytes` is complete, well-formed UTF-8 on its own.
bool is_valid_utf8(std::string_view bytes) noexcept;

// The longest prefix of `bytes` no longer than `max_size` that does not end
// inside a multi-byte character: for valid UTF-8, a valid prefix. O(1) (looks
// back at most 3 bytes). Used to cut close reasons to 123 bytes.
std::string_view utf8_prefix(std::string_view bytes, std::size_t max_size) noexcept;

}  // namespace heartwheel::ws
