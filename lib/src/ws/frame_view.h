// Reading back a frame this layer encoded (encode_shared): its opcode and
// payload, to compress it. Private to lib/src/ws.
#pragma once

#include <heartwheel/ws/frame.h>

#include <cstdint>
#include <string_view>

namespace heartwheel::ws::detail {

struct DataFrame {
  bool ok = false;  // one unmasked, unfragmented, uncompressed text or binary frame
  Opcode op = Opcode::text;
  std::string_view payload;
};

// `f` as a DataFrame; ok false for anything else (a control frame, a
// fragment, a frame with RSV bits: compressed already, several frames).
inline DataFrame data_frame(std::string_view f) noexcept {
  DataFrame d;
  if (f.size() < 2) return d;
  const auto b0 = static_cast<std::uint8_t>(f[0]);
  const auto b1 = static_cast<std::uint8_t>(f[1]);
  const auto op = static_cast<Opcode>(b0 & 0x0F);
  if ((b0 & 0xF0) != 0x80 || (b1 & 0x80) != 0 || (op != Opcode::text && op != Opcode::binary))
    return d;
  std::size_t head = 2;
  std::uint64_t length = b1 & 0x7F;
  if (length == 126 || length == 127) {
    const std::size_t n = length == 126 ? 2 : 8;
    if (f.size() < 2 + n) return d;
    length = 0;
    for (std::size_t i = 0; i < n; ++i)
      length = (length << 8) | static_cast<std::uint8_t>(f[2 + i]);
    head += n;
  }
  if (length != f.size() - head) return d;
  d.ok = true;
  d.op = op;
  d.payload = f.substr(head);
  return d;
}

}  // namespace heartwheel::ws::detail
