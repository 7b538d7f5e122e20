// How every heartwheel fuzz target reads its input, and how it reports a
// broken invariant. Header-only so each target stays one .cpp file.
//
// Input layout:  plan:u8 | stream...
//   The first byte decides how `stream` is cut into reads (bits 0-1):
//     0  the whole stream in one read
//     1  one byte per read
//     2  reads of (bits 2-7) + 1 bytes: 1..64
//     3  reads of pseudo-random sizes 1..(4 << (bits 2-3)) (4..32), from a
//        generator seeded by bits 4-7 and the stream length
//   so a seed file is one plan byte followed by real bytes (an HTTP request,
//   a PROXY header, RPC frames), and the fuzzer mutates both the bytes and
//   how they are split. Targets with options take them from a second byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// An invariant the target checks beyond what ASan/UBSan see. abort() makes
// libFuzzer save the input as a crash.
#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace fuzz {

inline std::string_view as_view(const std::uint8_t* data, std::size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};
}

// The reads of a stream under a plan byte. next() returns false when done.
class Reads {
 public:
  Reads(std::uint8_t plan, std::string_view stream) noexcept
      : stream_(stream), mode_(plan & 3u), param_(plan >> 2) {
    state_ = 0x9E3779B9u ^ (param_ >> 2) * 0x85EBCA6Bu ^ static_cast<std::uint32_t>(stream.size());
    if (state_ == 0) state_ = 1;
  }

  bool next(std::string_view& piece) noexcept {
    if (stream_.empty()) return false;
    std::size_t n = stream_.size();
    switch (mode_) {
      case 0:
        break;
      case 1:
        n = 1;
        break;
      case 2:
        n = param_ + 1u;
        break;
      default:
        n = 1 + random() % (4u << (param_ & 3u));
        break;
    }
    if (n > stream_.size()) n = stream_.size();
    piece = stream_.substr(0, n);
    stream_.remove_prefix(n);
    return true;
  }

  // A pseudo-random number from the same generator, for targets that also
  // vary what happens between reads (timers, answers).
  std::uint32_t random() noexcept {  // xorshift32
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return state_;
  }

 private:
  std::string_view stream_;
  unsigned mode_;
  unsigned param_;
  std::uint32_t state_;
};

}  // namespace fuzz
