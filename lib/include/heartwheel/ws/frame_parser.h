// heartwheel/ws/frame_parser.h - the incremental WebSocket frame parser.
//
// What it is
//   Reads frame headers and unmasks payloads, one frame at a time, from bytes
//   split in any way (any split of the input gives the same headers, the same
//   payload bytes and the same error at the same byte). It enforces the rules
//   that need no more than the frames themselves (RFC 6455 5.2-5.5); every
//   violation is a protocol error (close code 1002):
//     - RSV1-3 set without an extension that defines them (allowed_rsv),
//       or set on a control or continuation frame (the one extension that
//       defines one, permessage-deflate, marks first frames only: RFC 7692 6)
//     - a reserved opcode (0x3-0x7, 0xB-0xF)
//     - a fragmented control frame, or one with more than 125 bytes
//     - a frame whose MASK bit does not match the role (a server requires it)
//     - a 64-bit length with the most significant bit set
//     - a continuation frame with no fragmented message open, or a new text
//       or binary frame while one is open (control frames may interleave)
//   Each rule is checked as soon as the byte it depends on arrives (byte 0:
//   RSV, opcode, sequence; byte 1: MASK, control size; the last length byte:
//   the top bit), so a bad frame fails before the rest of its header.
//   Lengths that use a longer form than needed (e.g. 5 encoded in 16 bits) are
//   accepted: RFC 6455 asks senders for the minimal form, Autobahn|Testsuite
//   does not test receivers on it, and common servers accept it.
//
//   What it leaves to its caller (heartwheel/ws/session.h does it): message
//   size limits (the announced length is known before any payload byte), UTF-8
//   of text, close-frame payloads, and what to do with each frame.
//
// Use
//   std::string_view in = bytes;
//   while (!in.empty() || frame_open) {
//     if (!frame_open) {
//       auto s = parser.read_header(in);
//       if (s == FrameParser::Status::need_more) break;
//       if (s == FrameParser::Status::error) { fail(parser.error()); break; }
//       frame_open = true;                        // header() is the new frame
//     }
//     parser.read_payload(in, sink);              // 0..remaining() bytes
//     if (parser.remaining() > 0) break;          // wait for more bytes
//     frame_open = false;                         // the frame is complete
//   }
//
// Cost
//   A header is assembled in a 14-byte array inside the parser (at most 14
//   byte copies per frame). read_payload copies each payload byte once, into
//   the caller's buffer, and unmasks it there in the same pass, 8 bytes at a
//   time. No allocation apart from the caller's buffer growing. 56 bytes.
//
// Threads: one parser per connection, one thread.
#pragma once

#include <heartwheel/ws/frame.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace heartwheel::ws {

struct FrameHeader {
  bool fin = false;
  std::uint8_t rsv = 0;                  // RSV1, RSV2, RSV3 as bits 0b100, 0b010, 0b001
  Opcode opcode = Opcode::continuation;  // as on the wire
  bool masked = false;
  MaskKey mask{};
  std::uint64_t payload_length = 0;
};

class FrameParser {
 public:
  // role: server (expects masked frames) or client (expects unmasked ones).
  // allowed_rsv: RSV bits a negotiated extension defines (bits as in
  // FrameHeader::rsv); 0 without extensions.
  explicit FrameParser(Role role, std::uint8_t allowed_rsv = 0) noexcept
      : role_(role), allowed_rsv_(allowed_rsv) {}
  // Changes the RSV bits allowed from the next frame on (an extension
  // negotiated after the parser was made: ws::Session::use_deflate).
  void set_allowed_rsv(std::uint8_t allowed_rsv) noexcept { allowed_rsv_ = allowed_rsv; }

  enum class Status : std::uint8_t {
    need_more,  // `input` is used up; the partial header is kept
    header,     // a header was read: header() describes it; remaining() payload bytes follow
    error,      // the frame breaks a rule: error() says which. Sticky.
  };

  // Reads the next frame header from the front of `input`, advancing `input`
  // past the bytes used. Precondition: the previous frame's payload was read
  // (remaining() == 0).
  Status read_header(std::string_view& input) noexcept;

  // Moves up to remaining() payload bytes from the front of `input` to the end
  // of `out`, unmasked, advancing `input`. Returns how many were moved.
  std::size_t read_payload(std::string_view& input, std::string& out);
  // The same into raw memory with room for remaining() bytes.
  std::size_t read_payload(std::string_view& input, char* out) noexcept;

  // The header of the frame being read (or last read).
  const FrameHeader& header() const noexcept { return header_; }
  // Payload bytes of the current frame not read yet.
  std::uint64_t remaining() const noexcept { return header_.payload_length - payload_read_; }
  // Payload bytes of the current frame read so far.
  std::uint64_t payload_read() const noexcept { return payload_read_; }
  // True while a fragmented message is open: its first frame had FIN clear
  // and the continuation with FIN set has not been read (its header, that is).
  bool in_message() const noexcept { return in_message_; }
  // text or binary: the type of the latest data message (the one a
  // continuation frame belongs to).
  Opcode message_opcode() const noexcept { return message_opcode_; }

  bool failed() const noexcept { return error_ != 0; }
  // Why the parser failed ("reserved opcode", ...), or nullptr.
  const char* error() const noexcept;

 private:
  enum class Phase : std::uint8_t { byte0, byte1, length, mask };
  // Each returns why the header breaks a rule, or nullptr.
  const char* check_byte0() noexcept;
  const char* check_byte1() noexcept;
  const char* read_length() noexcept;
  void finish_header() noexcept;
  // One header byte of the current phase into header_.
  void take(std::uint8_t b) noexcept;
  Status fail(const char* why) noexcept;

  FrameHeader header_;
  std::uint64_t payload_read_ = 0;
  std::uint8_t error_ = 0;  // 0, or why it failed (an index into frame_parser.cpp's table)
  std::uint8_t have_ = 0;   // header bytes taken
  std::uint8_t need_ = 1;   // header bytes needed for the current phase
  Phase phase_ = Phase::byte0;
  Role role_;
  std::uint8_t allowed_rsv_;
  bool in_message_ = false;
  Opcode message_opcode_ = Opcode::text;
};

}  // namespace heartwheel::ws
