// Frame encoding, masking and close codes. See heartwheel/ws/frame.h.
#include <heartwheel/ws/frame.h>
#include <heartwheel/ws/utf8.h>

#include <cstring>
#include <stdexcept>

namespace heartwheel::ws {

const char* to_string(Opcode op) noexcept {
  switch (op) {
    case Opcode::continuation:
      return "continuation";
    case Opcode::text:
      return "text";
    case Opcode::binary:
      return "binary";
    case Opcode::close:
      return "close";
    case Opcode::ping:
      return "ping";
    case Opcode::pong:
      return "pong";
  }
  return "reserved";
}

bool is_valid_close_code(std::uint16_t code) noexcept {
  if (code >= 1000 && code <= 1003) return true;
  if (code >= 1007 && code <= 1014) return true;  // 1012-1014: IANA's (frame.h)
  return code >= 3000 && code <= 4999;
}

void apply_mask(char* data, std::size_t size, MaskKey key, std::size_t offset) noexcept {
  // The key as seen from `data`: rotated by the offset into the payload.
  unsigned char k[8];
  for (std::size_t i = 0; i < 8; ++i) k[i] = key[(offset + i) & 3];
  std::uint64_t k8;
  std::memcpy(&k8, k, sizeof k8);
  std::size_t i = 0;
  // Eight bytes per step; memcpy keeps it alignment-safe and compiles to plain loads.
  for (; i + 8 <= size; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, data + i, sizeof w);
    w ^= k8;
    std::memcpy(data + i, &w, sizeof w);
  }
  for (; i < size; ++i) data[i] = static_cast<char>(data[i] ^ static_cast<char>(k[i & 3]));
}

std::size_t write_frame_header(char* out, Opcode op, std::uint64_t payload_size, bool fin,
                               const MaskKey* mask) noexcept {
  auto* o = reinterpret_cast<unsigned char*>(out);
  o[0] = static_cast<unsigned char>((fin ? 0x80 : 0x00) | static_cast<std::uint8_t>(op));
  const unsigned char mask_bit = mask ? 0x80 : 0x00;
  std::size_t n = 2;
  if (payload_size < 126) {
    o[1] = static_cast<unsigned char>(mask_bit | payload_size);
  } else if (payload_size <= 0xFFFF) {
    o[1] = mask_bit | 126;
    o[2] = static_cast<unsigned char>(payload_size >> 8);
    o[3] = static_cast<unsigned char>(payload_size);
    n = 4;
  } else {
    o[1] = mask_bit | 127;
    for (int i = 0; i < 8; ++i) o[2 + i] = static_cast<unsigned char>(payload_size >> (56 - 8 * i));
    n = 10;
  }
  if (mask) {
    std::memcpy(o + n, mask->data(), 4);
    n += 4;
  }
  return n;
}

namespace {

void check_control(Opcode op, std::size_t payload_size, bool fin) {
  if (!is_control(op)) return;
  if (payload_size > kMaxControlPayload)
    throw std::invalid_argument(std::string("ws: a ") + to_string(op) +
                                " frame carries at most 125 bytes of payload, not " +
                                std::to_string(payload_size));
  if (!fin)
    throw std::invalid_argument(std::string("ws: a ") + to_string(op) +
                                " frame cannot be fragmented (fin must be true)");
}

}  // namespace

void append_frame(std::string& out, Opcode op, std::string_view payload, bool fin) {
  check_control(op, payload.size(), fin);
  char header[kMaxFrameHeaderSize];
  const std::size_t n = write_frame_header(header, op, payload.size(), fin);
  out.reserve(out.size() + n + payload.size());
  out.append(header, n);
  out.append(payload);
}

void append_masked_frame(std::string& out, Opcode op, std::string_view payload, MaskKey mask,
                         bool fin) {
  check_control(op, payload.size(), fin);
  char header[kMaxFrameHeaderSize];
  const std::size_t n = write_frame_header(header, op, payload.size(), fin, &mask);
  out.reserve(out.size() + n + payload.size());
  out.append(header, n);
  const std::size_t start = out.size();
  out.append(payload);
  apply_mask(out.data() + start, payload.size(), mask);
}

std::string encode_frame(Opcode op, std::string_view payload, bool fin) {
  std::string out;
  append_frame(out, op, payload, fin);
  return out;
}

SharedFrame encode_shared(Opcode op, std::string_view payload) {
  auto frame = std::make_shared<std::string>();
  append_frame(*frame, op, payload);
  return frame;
}

std::string close_payload(std::uint16_t code, std::string_view reason) {
  const std::string_view cut = utf8_prefix(reason, kMaxCloseReason);
  std::string out;
  out.reserve(2 + cut.size());
  out.push_back(static_cast<char>(code >> 8));
  out.push_back(static_cast<char>(code & 0xFF));
  out.append(cut);
  return out;
}

}  // namespace heartwheel::ws
