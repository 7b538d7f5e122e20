// The UTF-8 automaton. See heartwheel/ws/utf8.h.
//
// Bytes fall into 12 classes; the automaton has 9 states (run as a shift
// table, see kRows below). From "accept", a
// lead byte picks how many continuation bytes follow and, for the four lead
// bytes whose first continuation is restricted (E0, ED, F0, F4), a state that
// only admits the allowed range: that is what rejects overlong forms,
// surrogates and code points above U+10FFFF at the first offending byte.
//
//   class  bytes                 class  bytes
//   0      00..7F  ASCII         6      E1..EC, EE..EF  (3-byte lead)
//   1      80..8F  continuation  7      ED   (3-byte lead, no surrogates)
//   2      90..9F  continuation  8      F0   (4-byte lead, no overlong)
//   3      A0..BF  continuation  9      F1..F3 (4-byte lead)
//   4      C2..DF  2-byte lead   10     F4   (4-byte lead, <= U+10FFFF)
//   5      E0  (3-byte, no overlong)  11  C0, C1, F5..FF: never valid
#include <heartwheel/ws/utf8.h>

#include <array>
#include <cstring>

namespace heartwheel::ws {

namespace {

constexpr int kClasses = 12;

enum State : std::uint8_t {
  kAccept,
  kReject,
  kNeed1,    // one continuation byte (80..BF) left
  kNeed2,    // two left
  kNeed3,    // three left
  kAfterE0,  // A0..BF, then one more
  kAfterED,  // 80..9F, then one more
  kAfterF0,  // 90..BF, then two more
  kAfterF4,  // 80..8F, then two more
  kStates
};

constexpr std::array<std::uint8_t, 256> make_classes() {
  std::array<std::uint8_t, 256> c{};
  auto fill = [&c](int first, int last, std::uint8_t cls) {
    for (int b = first; b <= last; ++b) c[static_cast<std::size_t>(b)] = cls;
  };
  fill(0x00, 0x7F, 0);
  fill(0x80, 0x8F, 1);
  fill(0x90, 0x9F, 2);
  fill(0xA0, 0xBF, 3);
  fill(0xC0, 0xC1, 11);
  fill(0xC2, 0xDF, 4);
  fill(0xE0, 0xE0, 5);
  fill(0xE1, 0xEC, 6);
  fill(0xED, 0xED, 7);
  fill(0xEE, 0xEF, 6);
  fill(0xF0, 0xF0, 8);
  fill(0xF1, 0xF3, 9);
  fill(0xF4, 0xF4, 10);
  fill(0xF5, 0xFF, 11);
  return c;
}

constexpr std::array<std::uint8_t, kStates * kClasses> make_transitions() {
  std::array<std::uint8_t, kStates * kClasses> t{};
  for (auto& s : t) s = kReject;
  auto set = [&t](State from, int cls, State to) {
    t[static_cast<std::size_t>(from * kClasses + cls)] = to;
  };
  set(kAccept, 0, kAccept);
  set(kAccept, 4, kNeed1);
  set(kAccept, 5, kAfterE0);
  set(kAccept, 6, kNeed2);
  set(kAccept, 7, kAfterED);
  set(kAccept, 8, kAfterF0);
  set(kAccept, 9, kNeed3);
  set(kAccept, 10, kAfterF4);
  for (int cont = 1; cont <= 3; ++cont) {
    set(kNeed1, cont, kAccept);
    set(kNeed2, cont, kNeed1);
    set(kNeed3, cont, kNeed2);
  }
  set(kAfterE0, 3, kNeed1);
  set(kAfterED, 1, kNeed1);
  set(kAfterED, 2, kNeed1);
  set(kAfterF0, 2, kNeed2);
  set(kAfterF0, 3, kNeed2);
  set(kAfterF4, 1, kNeed2);
  return t;
}

// The automaton as a shift table (a "shift DFA"): a state is stored as a bit
// offset (state * 6), and row[b] holds, at each state's offset, the offset of
// the state byte b leads to. One step is then `row[b] >> state & 63`: the
// load does not depend on the state, so the chain from byte to byte is one
// shift and one mask instead of a dependent table lookup.
constexpr int kBits = 6;
constexpr std::uint64_t kMask = 63;
static_assert(kStates * kBits <= 64, "every state's next state fits in one 64-bit row");

constexpr std::array<std::uint64_t, 256> make_rows() {
  constexpr auto classes = make_classes();
  constexpr auto next = make_transitions();
  std::array<std::uint64_t, 256> rows{};
  for (std::size_t b = 0; b < 256; ++b)
    for (int s = 0; s < kStates; ++s) {
      const std::uint64_t to = next[static_cast<std::size_t>(s * kClasses + classes[b])];
      rows[b] |= (to * kBits) << (s * kBits);
    }
  return rows;
}

constexpr auto kRows = make_rows();

constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;

}  // namespace

bool Utf8Validator::feed(std::string_view bytes) noexcept {
  static_assert(Utf8Validator::kAccept == State::kAccept * kBits &&
                Utf8Validator::kReject == State::kReject * kBits);
  std::uint64_t state = state_;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto* end = p + bytes.size();
  while (p != end) {
    // Text is mostly ASCII: between characters, skip 8 ASCII bytes at once.
    if (state == Utf8Validator::kAccept) {
      while (end - p >= 8) {
        std::uint64_t word;
        std::memcpy(&word, p, sizeof word);
        if (word & kHighBits) break;
        p += 8;
      }
      if (p == end) break;
    }
    // The reject state leads to itself, so no check per byte: the failure is
    // seen at the end of this call, with the bytes that caused it.
    state = (kRows[*p++] >> state) & kMask;
  }
  state_ = static_cast<std::uint8_t>(state);
  return state_ != Utf8Validator::kReject;
}

bool is_valid_utf8(std::string_view bytes) noexcept {
  Utf8Validator v;
  return v.feed(bytes) && v.complete();
}

std::string_view utf8_prefix(std::string_view bytes, std::size_t max_size) noexcept {
  if (bytes.size() <= max_size) return bytes;
  std::size_t cut = max_size;
  // bytes[cut] is the first byte left out: while it continues a character,
  // that character would be cut in two; a character has at most 3 of them.
  for (int back = 0; back < 3 && cut > 0; ++back) {
    if ((static_cast<unsigned char>(bytes[cut]) & 0xC0) != 0x80) break;
    --cut;
  }
  if ((static_cast<unsigned char>(bytes[cut]) & 0xC0) == 0x80) cut = max_size;  // not UTF-8 anyway
  return bytes.substr(0, cut);
}

}  // namespace heartwheel::ws
