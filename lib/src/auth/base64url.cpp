// Strict base64url decoding (base64url.h).
#include "base64url.h"

#include <array>
#include <cstdint>

namespace heartwheel::auth::detail {

namespace {

constexpr std::uint8_t kInvalid = 0xff;

constexpr std::array<std::uint8_t, 256> make_table() {
  std::array<std::uint8_t, 256> t{};
  for (auto& v : t) v = kInvalid;
  constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (std::size_t i = 0; i < alphabet.size(); ++i)
    t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::uint8_t>(i);
  return t;
}
constexpr std::array<std::uint8_t, 256> kTable = make_table();

}  // namespace

bool base64url_decode(std::string_view in, unsigned char* out) noexcept {
  const std::size_t tail = in.size() % 4;
  if (tail == 1) return false;
  std::size_t i = 0;
  std::size_t o = 0;
  for (; i + 4 <= in.size(); i += 4) {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const std::uint8_t d = kTable[static_cast<unsigned char>(in[i + k])];
      if (d == kInvalid) return false;
      v = (v << 6) | d;
    }
    out[o++] = static_cast<unsigned char>(v >> 16);
    out[o++] = static_cast<unsigned char>(v >> 8);
    out[o++] = static_cast<unsigned char>(v);
  }
  if (tail == 0) return true;
  std::uint32_t v = 0;
  for (std::size_t k = 0; k < tail; ++k) {
    const std::uint8_t d = kTable[static_cast<unsigned char>(in[i + k])];
    if (d == kInvalid) return false;
    v = (v << 6) | d;
  }
  if (tail == 2) {  // 12 bits: one byte and 4 unused bits
    if ((v & 0x0f) != 0) return false;
    out[o] = static_cast<unsigned char>(v >> 4);
  } else {  // 18 bits: two bytes and 2 unused bits
    if ((v & 0x03) != 0) return false;
    out[o] = static_cast<unsigned char>(v >> 10);
    out[o + 1] = static_cast<unsigned char>(v >> 2);
  }
  return true;
}

bool base64url_decode(std::string_view in, std::string& out) {
  if (in.size() % 4 == 1) return false;
  out.resize(base64url_decoded_size(in.size()));
  return base64url_decode(in, reinterpret_cast<unsigned char*>(out.data()));
}

bool base64_decode(std::string_view in, std::string& out) {
  if (in.size() % 4 == 0 && in.size() >= 4) {  // padding only completes a group
    if (in.back() == '=') in.remove_suffix(1);
    if (in.back() == '=') in.remove_suffix(1);
  }
  std::string url(in);
  for (char& c : url) {
    if (c == '-' || c == '_') return false;  // not the standard alphabet
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return base64url_decode(url, out);
}

}  // namespace heartwheel::auth::detail
