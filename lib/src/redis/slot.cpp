// Hash slots and evenly spread partition tags (heartwheel/redis/slot.h).
#include <heartwheel/redis/slot.h>

#include <array>
#include <stdexcept>

namespace heartwheel::redis {

namespace {
// CRC16/XMODEM by table, one entry per byte value.
constexpr std::array<std::uint16_t, 256> make_table() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1;
    t[i] = static_cast<std::uint16_t>(crc & 0xffff);
  }
  return t;
}
constexpr auto kTable = make_table();

// Candidate tags in a fixed order: base-36 numerals, "0", "1", ... "z", "10".
std::string numeral(std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[n % 36]);
    n /= 36;
  } while (n != 0);
  return out;
}
}  // namespace

std::uint16_t crc16(std::string_view bytes) noexcept {
  std::uint16_t crc = 0;
  for (const char c : bytes)
    crc = static_cast<std::uint16_t>((crc << 8) ^
                                     kTable[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff]);
  return crc;
}

std::string_view hash_tag(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) & (kSlotCount - 1));
}

// One pass over the candidates, each landing in the slot range it hashes
// to; the first to land in a range becomes that partition's tag. Every range
// is at least one slot wide, and every slot is hit by some short numeral, so
// this ends (after about N ln N candidates, the coupon collector's bound).
Partitions::Partitions(std::size_t count) {
  if (count == 0 || count > kSlotCount)
    throw std::invalid_argument("redis: Partitions count must be 1..16384");
  tags_.resize(count);
  std::size_t filled = 0;
  for (std::size_t n = 0; filled < count; ++n) {
    std::string tag = "p" + numeral(n);
    const std::size_t range = std::size_t{key_slot(tag)} * count / kSlotCount;
    if (!tags_[range].empty()) continue;
    tags_[range] = std::move(tag);
    ++filled;
  }
}

std::size_t Partitions::of(std::string_view name) const noexcept {
  return crc16(name) % tags_.size();
}

std::string Partitions::braced(std::size_t i) const { return "{" + tags_[i] + "}"; }

}  // namespace heartwheel::redis
