// Hash flooding (issue 23): 20,000 valid 16-byte channel names that all have
// the same std::hash, made by inverting libstdc++'s MurmurHash64A-based
// std::hash<std::string_view>, published to a pubsub::Bus. With the unkeyed
// hash they all fell in one bucket of one shard (7.5 s of CPU against 0.23 s
// for random names, quadratic); with KeyedStringHash (SipHash-2-4 under a
// per-process random key) they cost what random names cost. Also: the cost
// of one KeyedStringHash against std::hash, printed for docs/BENCHMARKS.md.
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/keyed_hash.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace pubsub = heartwheel::pubsub;

namespace {

// libstdc++'s _Hash_bytes for 64-bit size_t (libsupc++/hash_bytes.cc), as
// std::hash<std::string_view> calls it (seed 0xc70f6907).
constexpr std::uint64_t kMul = (std::uint64_t{0xc6a4a793} << 32) + 0x5bd1e995;
constexpr std::uint64_t kSeed = 0xc70f6907;
std::uint64_t shift_mix(std::uint64_t v) { return v ^ (v >> 47); }  // its own inverse

std::uint64_t inverse(std::uint64_t a) {  // of an odd a, mod 2^64 (Newton)
  std::uint64_t x = a;
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}

bool valid_channel_byte(unsigned char c) { return c >= 0x21 && c <= 0x7e && c != '"' && c != '\\'; }

// `count` 16-byte names, all with the same std::hash: a random valid first
// block, and the second block that brings the state to one fixed value
// (kept when its 8 bytes are valid channel characters, about 1 in 3,600).
std::vector<std::string> colliding_names(std::size_t count) {
  const std::uint64_t inv = inverse(kMul);
  const std::uint64_t h0 = kSeed ^ (16 * kMul);
  const std::uint64_t target = 0x0123456789abcdefULL;  // the state after both blocks
  std::mt19937_64 gen(23);
  std::vector<std::string> out;
  while (out.size() < count) {
    char block1[8];
    for (char& c : block1) {
      do c = static_cast<char>(0x21 + gen() % 94);
      while (!valid_channel_byte(static_cast<unsigned char>(c)));
    }
    std::uint64_t k1;
    std::memcpy(&k1, block1, 8);
    const std::uint64_t h1 = (h0 ^ (shift_mix(k1 * kMul) * kMul)) * kMul;
    const std::uint64_t d2 = (target * inv) ^ h1;  // what block 2 must mix to
    const std::uint64_t k2 = shift_mix(d2 * inv) * inv;
    unsigned char b2[8];
    std::memcpy(b2, &k2, 8);
    bool ok = true;
    for (unsigned char c : b2) ok = ok && valid_channel_byte(c);
    if (!ok) continue;
    std::string name(block1, 8);
    name.append(reinterpret_cast<const char*>(b2), 8);
    out.push_back(std::move(name));
  }
  return out;
}

std::vector<std::string> random_names(std::size_t count) {
  std::mt19937_64 gen(7);
  std::vector<std::string> out;
  while (out.size() < count) {
    std::string name(16, 'a');
    for (char& c : name) {
      do c = static_cast<char>(0x21 + gen() % 94);
      while (!valid_channel_byte(static_cast<unsigned char>(c)));
    }
    out.push_back(std::move(name));
  }
  return out;
}

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

// CPU seconds to publish once to each name (each a new channel with history).
double publish_all(const std::vector<std::string>& names) {
  pubsub::BusOptions o;
  o.channel.history_size = 1;
  o.channel.history_ttl = std::chrono::minutes(5);
  o.channel.history_before_subscribers = true;  // each publish makes its channel
  pubsub::Bus bus(o);
  const double start = cpu_seconds();
  for (const std::string& n : names) REQUIRE_FALSE(bus.publish(n, "1").error);
  const double spent = cpu_seconds() - start;
  REQUIRE(bus.stats().channels == names.size());
  return spent;
}

}  // namespace

TEST_CASE("20,000 channel names with one std::hash cost a bus no more than 3x random names",
          "[pubsub][hash][slow]") {
  constexpr std::size_t kNames = 20000;
  const std::vector<std::string> colliding = colliding_names(kNames);
  const std::size_t first = std::hash<std::string_view>{}(colliding[0]);
  for (const std::string& n : colliding) REQUIRE(std::hash<std::string_view>{}(n) == first);
  const std::vector<std::string> random = random_names(kNames);

  // Best of 3 each: the machine is shared.
  double c = 1e9, r = 1e9;
  for (int i = 0; i < 3; ++i) {
    c = std::min(c, publish_all(colliding));
    r = std::min(r, publish_all(random));
  }
  std::printf("hash flood: %zu colliding names %.3f s CPU, random %.3f s (ratio %.2f)\n", kNames,
              c, r, c / r);
  CHECK(c <= 3 * r + 0.05);  // + 50 ms: clock() granularity on a short run
}

TEST_CASE("KeyedStringHash costs per 16-byte name, against std::hash", "[pubsub][hash]") {
  const std::vector<std::string> names = random_names(4096);
  constexpr int kRounds = 200;
  std::size_t sink = 0;
  auto time_ns = [&](auto&& hash) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < kRounds; ++r)
      for (const std::string& n : names) sink += hash(std::string_view(n));
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
               .count() /
           (kRounds * static_cast<double>(names.size()));
  };
  const double keyed = time_ns(pubsub::KeyedStringHash{});
  const double plain = time_ns(std::hash<std::string_view>{});
  std::printf("hash per 16-byte name: KeyedStringHash %.1f ns, std::hash %.1f ns (sink %zu)\n",
              keyed, plain, sink % 10);
  // The same name hashes the same within a process; different ones differ.
  CHECK(pubsub::KeyedStringHash{}("abc") == pubsub::KeyedStringHash{}(std::string("abc")));
  CHECK(pubsub::KeyedStringHash{}("abc") != pubsub::KeyedStringHash{}("abd"));
}
