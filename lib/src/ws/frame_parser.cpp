// The frame parser. See heartwheel/ws/frame_parser.h.
//
// A header is read in four phases so that each rule is checked as soon as the
// bytes it depends on are known: byte 0 (FIN, RSV, opcode, fragmentation
// sequence), byte 1 (MASK, 7-bit length, control-frame size), the extended
// length (its top bit), then the masking key. Each byte is decoded into the
// header as it arrives (take()), so a header cut across reads needs no
// buffer: 16 bytes less on every WebSocket connection.
#include <heartwheel/ws/frame_parser.h>

#include <algorithm>
#include <cstring>

namespace heartwheel::ws {

namespace {

// Why a header breaks a rule: error() names it; the parser keeps its index
// in one byte (a pointer cost 8 bytes on every WebSocket connection).
constexpr const char* kWhy[] = {
    nullptr,
    "reserved bits set without an extension",
    "reserved opcode",
    "compressed bit on a control or continuation frame",
    "fragmented control frame",
    "continuation frame without a message to continue",
    "new data frame before the fragmented message was finished",
    "client frame not masked",
    "server frame masked",
    "control frame payload above 125 bytes",
    "64-bit payload length with the most significant bit set",
};
constexpr const char* kReservedBits = kWhy[1];
constexpr const char* kReservedOpcode = kWhy[2];
constexpr const char* kCompressedControl = kWhy[3];
constexpr const char* kFragmentedControl = kWhy[4];
constexpr const char* kLoneContinuation = kWhy[5];
constexpr const char* kInterleavedData = kWhy[6];
constexpr const char* kClientUnmasked = kWhy[7];
constexpr const char* kServerMasked = kWhy[8];
constexpr const char* kControlTooLong = kWhy[9];
constexpr const char* kLengthTopBit = kWhy[10];

}  // namespace

FrameParser::Status FrameParser::fail(const char* why) noexcept {
  error_ = 0;
  for (std::size_t i = 1; i < std::size(kWhy); ++i) {
    if (kWhy[i] == why) error_ = static_cast<std::uint8_t>(i);
  }
  return Status::error;
}

const char* FrameParser::error() const noexcept { return kWhy[error_]; }

void FrameParser::take(std::uint8_t b) noexcept {
  switch (phase_) {
    case Phase::byte0:
      header_.fin = (b & 0x80) != 0;
      header_.rsv = static_cast<std::uint8_t>((b >> 4) & 0x7);
      header_.opcode = static_cast<Opcode>(b & 0x0F);  // checked by check_byte0
      break;
    case Phase::byte1:
      header_.masked = (b & 0x80) != 0;
      header_.payload_length = b & 0x7F;  // the 7-bit length (check_byte1)
      break;
    case Phase::length:  // the extended length, most significant byte first
      header_.payload_length = header_.payload_length << 8 | b;
      break;
    case Phase::mask:  // the last 4 of need_ bytes
      header_.mask[static_cast<std::size_t>(have_ - (need_ - 4))] = b;
      break;
  }
  ++have_;
}

const char* FrameParser::check_byte0() noexcept {
  const auto op = static_cast<std::uint8_t>(header_.opcode);
  if (header_.rsv & ~allowed_rsv_) return kReservedBits;
  if (!is_known_opcode(op)) return kReservedOpcode;
  if (header_.rsv != 0 && (is_control(header_.opcode) || header_.opcode == Opcode::continuation))
    return kCompressedControl;
  if (is_control(header_.opcode)) {
    if (!header_.fin) return kFragmentedControl;
  } else if (header_.opcode == Opcode::continuation) {
    if (!in_message_) return kLoneContinuation;
  } else if (in_message_) {
    return kInterleavedData;
  }
  return nullptr;
}

const char* FrameParser::check_byte1() noexcept {
  if (header_.masked != (role_ == Role::server))
    return role_ == Role::server ? kClientUnmasked : kServerMasked;
  const std::uint64_t len7 = header_.payload_length;
  if (is_control(header_.opcode) && len7 > kMaxControlPayload) return kControlTooLong;
  need_ = static_cast<std::uint8_t>(2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0));
  if (need_ > 2) header_.payload_length = 0;  // the extended length's bytes shift in
  return nullptr;
}

const char* FrameParser::read_length() noexcept {
  if (need_ == 10 && header_.payload_length >> 63) return kLengthTopBit;
  if (header_.masked) need_ = static_cast<std::uint8_t>(need_ + 4);
  return nullptr;
}

void FrameParser::finish_header() noexcept {
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
  if (error_ != 0) return Status::error;
  for (;;) {
    // The bytes this phase needs go straight into the header's fields (a
    // header is at most 14 bytes: no buffer of its own to gather them in).
    while (have_ < need_) {
      if (input.empty()) return Status::need_more;
      take(static_cast<std::uint8_t>(input.front()));
      input.remove_prefix(1);
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
