// The frame parser. See heartwheel/ws/frame_parser.h.
//
// A header is read in four phases so that each rule is checked as soon as the
// bytes it depends on are known: byte 0 (FIN, RSV, opcode, fragmentation
// sequence), byte 1 (MASK, 7-bit length, control-frame size), the extended
// length (its top bit), then the masking key.
#include <heartwheel/ws/frame_parser.h>

#include <algorithm>
#include <cstring>

namespace heartwheel::ws {

namespace {
std::uint8_t byte_at(const char* buf, std::size_t i) noexcept {
  return static_cast<std::uint8_t>(buf[i]);
}
}  // namespace

FrameParser::Status FrameParser::fail(const char* why) noexcept {
  error_ = why;
  return Status::error;
}

const char* FrameParser::check_byte0() noexcept {
  const std::uint8_t b = byte_at(buf_, 0);
  header_.fin = (b & 0x80) != 0;
  header_.rsv = static_cast<std::uint8_t>((b >> 4) & 0x7);
  const std::uint8_t op = b & 0x0F;
  if (header_.rsv & ~allowed_rsv_) return "reserved bits set without an extension";
  if (!is_known_opcode(op)) return "reserved opcode";
  header_.opcode = static_cast<Opcode>(op);
  if (header_.rsv != 0 && (is_control(header_.opcode) || header_.opcode == Opcode::continuation))
    return "compressed bit on a control or continuation frame";
  if (is_control(header_.opcode)) {
    if (!header_.fin) return "fragmented control frame";
  } else if (header_.opcode == Opcode::continuation) {
    if (!in_message_) return "continuation frame without a message to continue";
  } else if (in_message_) {
    return "new data frame before the fragmented message was finished";
  }
  return nullptr;
}

const char* FrameParser::check_byte1() noexcept {
  const std::uint8_t b = byte_at(buf_, 1);
  header_.masked = (b & 0x80) != 0;
  if (header_.masked != (role_ == Role::server))
    return role_ == Role::server ? "client frame not masked" : "server frame masked";
  const std::uint8_t len7 = b & 0x7F;
  if (is_control(header_.opcode) && len7 > kMaxControlPayload)
    return "control frame payload above 125 bytes";
  need_ = static_cast<std::uint8_t>(2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0));
  return nullptr;
}

const char* FrameParser::read_length() noexcept {
  const std::uint8_t len7 = byte_at(buf_, 1) & 0x7F;
  std::uint64_t length = len7;
  if (len7 == 126) {
    length = (std::uint64_t{byte_at(buf_, 2)} << 8) | byte_at(buf_, 3);
  } else if (len7 == 127) {
    length = 0;
    for (std::size_t i = 0; i < 8; ++i) length = (length << 8) | byte_at(buf_, 2 + i);
    if (length >> 63) return "64-bit payload length with the most significant bit set";
  }
  header_.payload_length = length;
  if (header_.masked) need_ = static_cast<std::uint8_t>(need_ + 4);
  return nullptr;
}

void FrameParser::finish_header() noexcept {
  if (header_.masked) std::memcpy(header_.mask.data(), buf_ + have_ - 4, 4);
  payload_read_ = 0;
  // The fragmentation sequence moves on once the header is accepted.
  if (header_.opcode == Opcode::text || header_.opcode == Opcode::binary) {
    message_opcode_ = header_.opcode;
    in_message_ = !header_.fin;
  } else if (header_.opcode == Opcode::continuation) {
    in_message_ = !header_.fin;
  }
  have_ = 0;
  need_ = 1;
  phase_ = Phase::byte0;
}

FrameParser::Status FrameParser::read_header(std::string_view& input) noexcept {
  if (error_) return Status::error;
  for (;;) {
    if (have_ < need_) {
      if (input.empty()) return Status::need_more;
      const std::size_t take = std::min<std::size_t>(need_ - have_, input.size());
      std::memcpy(buf_ + have_, input.data(), take);
      have_ = static_cast<std::uint8_t>(have_ + take);
      input.remove_prefix(take);
      if (have_ < need_) return Status::need_more;
    }
    // have_ == need_: the bytes this phase needs are here. A phase may need
    // none of its own (no extended length, no mask) and fall through at once.
    switch (phase_) {
      case Phase::byte0:
        if (const char* why = check_byte0()) return fail(why);
        need_ = 2;
        phase_ = Phase::byte1;
        break;
      case Phase::byte1:
        if (const char* why = check_byte1()) return fail(why);
        phase_ = Phase::length;
        break;
      case Phase::length:
        if (const char* why = read_length()) return fail(why);
        phase_ = Phase::mask;
        break;
      case Phase::mask:
        finish_header();
        return Status::header;
    }
  }
}

std::size_t FrameParser::read_payload(std::string_view& input, std::string& out) {
  const std::size_t n =
      static_cast<std::size_t>(std::min<std::uint64_t>(remaining(), input.size()));
  if (n == 0) return 0;
  const std::size_t start = out.size();
  out.append(input.data(), n);
  if (header_.masked)
    apply_mask(out.data() + start, n, header_.mask, static_cast<std::size_t>(payload_read_));
  payload_read_ += n;
  input.remove_prefix(n);
  return n;
}

std::size_t FrameParser::read_payload(std::string_view& input, char* out) noexcept {
  const std::size_t n =
      static_cast<std::size_t>(std::min<std::uint64_t>(remaining(), input.size()));
  if (n == 0) return 0;
  std::memcpy(out, input.data(), n);
  if (header_.masked) apply_mask(out, n, header_.mask, static_cast<std::size_t>(payload_read_));
  payload_read_ += n;
  input.remove_prefix(n);
  return n;
}

}  // namespace heartwheel::ws
