// heartwheel/redis/slot.h - Redis Cluster's hash slots: which slot a key is
// in, and names spread evenly over the slots.
//
// Redis Cluster splits the key space into 16,384 slots: slot = CRC16 (the
// XMODEM variant: polynomial 0x1021, initial value 0) of the key, mod 16384.
// When the key contains "{...}" with at least one byte between the FIRST '{'
// and the first '}' after it, only those bytes are hashed (the hash tag), so
// keys sharing a tag share a slot: "{user1000}.following" and
// "{user1000}.followers" are both in slot 3443. Multi-key commands and Lua
// scripts must touch one slot only (else CROSSSLOT), and all channels of
// one SSUBSCRIBE must share a slot.
//
// Partitions (Centrifugo's grouping): a layer that wants many names
// (channels, queues) in few slots maps each name to one of N partitions and
// keys it with the partition's hash tag. Bare tags "{0}".."{N-1}" spread
// badly (CRC16 of short decimal strings clusters: with three masters one
// can get most of them), so Partitions picks for partition i a short tag
// whose slot lies in the i-th of N equal slot ranges: the partitions are
// spread as evenly over the slots as N allows, hence over the masters in
// proportion to the slots each owns.
//
// Cost: key_slot O(key length), one table lookup per byte; Partitions'
//   constructor O(N log N) CRC16s of short strings (once, at startup);
//   of() O(name length).
// Threads: pure functions; a const Partitions may be shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::redis {

inline constexpr std::uint16_t kSlotCount = 16384;

// CRC16/XMODEM of `bytes` (crc16("123456789") == 0x31C3).
std::uint16_t crc16(std::string_view bytes) noexcept;
// The part of `key` that is hashed: its hash tag if it has a non-empty one,
// else the whole key.
std::string_view hash_tag(std::string_view key) noexcept;
// The key's slot, 0..16383.
std::uint16_t key_slot(std::string_view key) noexcept;

class Partitions {
 public:
  // Precondition: 1 <= count <= kSlotCount (else std::invalid_argument).
  explicit Partitions(std::size_t count);

  std::size_t size() const noexcept { return tags_.size(); }
  // The partition of `name`: CRC16 of the whole name mod size() - stable
  // across processes, versions and machines (every node must agree).
  std::size_t of(std::string_view name) const noexcept;
  // Partition i's hash tag without braces (a few letters and digits).
  // Precondition: i < size().
  const std::string& tag(std::size_t i) const noexcept { return tags_[i]; }
  // "{" + tag + "}": what a key of partition i starts with (after a prefix).
  std::string braced(std::size_t i) const;

 private:
  std::vector<std::string> tags_;
};

}  // namespace heartwheel::redis
