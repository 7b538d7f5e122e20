// heartwheel/pubsub/keyed_hash.h - the hash of maps keyed by names a client
// chooses (channels): SipHash-2-4 under a per-process random key.
//
// Why: with an unkeyed hash (std::hash) anyone can precompute many names with
// one hash value and turn a map's O(1) lookups into O(n) list walks under a
// lock (20,000 colliding 16-byte channel names cost 7.5 s of CPU to publish,
// 0.23 s for random ones). SipHash is a keyed PRF: without the key,
// collisions cannot be found offline. The implementation is libsodium's
// crypto_shorthash (SipHash-2-4, 64-bit output; no hand-written crypto); the
// 16-byte key comes from the kernel's CSPRNG once per process.
//
// Cost: one SipHash-2-4 over the name per call (docs/BENCHMARKS.md has it
// next to std::hash). Threads: any; the key is made once, thread-safely, at
// the first call. Transparent: find(std::string_view) on a map of strings.
#pragma once

#include <cstddef>
#include <string_view>

namespace heartwheel::pubsub {

struct KeyedStringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept;
};

}  // namespace heartwheel::pubsub
