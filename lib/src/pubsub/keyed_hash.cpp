// See heartwheel/pubsub/keyed_hash.h.
#include <heartwheel/common/log.h>
#include <heartwheel/pubsub/keyed_hash.h>
#include <sodium.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace heartwheel::pubsub {

namespace {

using Key = std::array<unsigned char, crypto_shorthash_KEYBYTES>;

Key make_key() noexcept {
  // sodium_init() seeds libsodium's generator from the kernel (getrandom);
  // it is safe to call more than once and from several threads.
  if (sodium_init() < 0) {
    log::error("heartwheel::pubsub: libsodium could not be initialised");
    std::abort();
  }
  Key key;
  randombytes_buf(key.data(), key.size());
  return key;
}

const Key& process_key() noexcept {
  static const Key key = make_key();  // thread-safe: a function-local static
  return key;
}

}  // namespace

std::size_t KeyedStringHash::operator()(std::string_view s) const noexcept {
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, reinterpret_cast<const unsigned char*>(s.data()), s.size(),
                   process_key().data());
  std::uint64_t h;
  static_assert(sizeof h == crypto_shorthash_BYTES);
  std::memcpy(&h, out, sizeof h);
  return static_cast<std::size_t>(h);
}

}  // namespace heartwheel::pubsub
