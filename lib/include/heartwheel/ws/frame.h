// heartwheel/ws/frame.h - WebSocket frames (RFC 6455 section 5): opcodes,
// close codes, masking and the frame encoders.
//
// Wire format, as encoded here:
//
//   byte 0   FIN | RSV1 | RSV2 | RSV3 | opcode(4)
//   byte 1   MASK | length7
//   then     length7 == 126: 16-bit length; 127: 64-bit length (big-endian)
//   then     4-byte masking key if MASK
//   then     payload (XORed with the key, byte i with key[i % 4], if MASK)
//
// Encoders always use the shortest length form; the parser
// (heartwheel/ws/frame_parser.h) also accepts longer ones, as Autobahn and the
// common servers do. A server sends unmasked frames (append_frame,
// encode_frame, encode_shared); a client masks every frame
// (append_masked_frame).
//
// Sharing a frame: encode_shared() encodes once into an immutable,
// reference-counted buffer (SharedFrame). A publication to many subscribers is
// encoded once and each session sends the same bytes (Session::send_shared);
// no subscriber copies them. Only unmasked (server) frames can be shared: a
// client's mask differs per frame.
//
// Preconditions (checked; std::invalid_argument with the reason): a control
// frame (close, ping, pong) carries at most 125 bytes of payload and is never
// fragmented. Not checked: that a text payload is valid UTF-8 (the peer checks
// it and closes with 1007; validate with heartwheel/ws/utf8.h if unsure).
//
// Cost: append_* reserve once and copy the payload once; a masked frame XORs it
// in the same pass over the copy, 8 bytes at a time. encode_shared makes two
// allocations (control block + string, and the string's bytes) per frame, not
// per subscriber.
//
// Threads: pure functions; a SharedFrame may be read from any thread (its
// reference count is atomic, its bytes never change).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace heartwheel::ws {

// Which end of the connection a session or parser plays: a server expects
// masked frames and sends unmasked ones; a client the reverse.
enum class Role : std::uint8_t { server, client };

enum class Opcode : std::uint8_t {
  continuation = 0x0,
  text = 0x1,
  binary = 0x2,
  close = 0x8,
  ping = 0x9,
  pong = 0xA,
};

// "text", "ping", ...; "reserved" for the opcodes RFC 6455 leaves unassigned.
const char* to_string(Opcode op) noexcept;
// Close, ping and pong (and the reserved 0xB..0xF) have the high opcode bit set.
constexpr bool is_control(Opcode op) noexcept { return (static_cast<std::uint8_t>(op) & 0x8) != 0; }
// The six opcodes above; 0x3..0x7 and 0xB..0xF are reserved.
constexpr bool is_known_opcode(std::uint8_t op) noexcept {
  return op <= 0x2 || (op >= 0x8 && op <= 0xA);
}

// Close codes (RFC 6455 7.4.1). Applications use 3000..4999.
inline constexpr std::uint16_t kCloseNormal = 1000;
inline constexpr std::uint16_t kCloseGoingAway = 1001;
inline constexpr std::uint16_t kCloseProtocolError = 1002;
inline constexpr std::uint16_t kCloseUnsupportedData = 1003;
inline constexpr std::uint16_t kCloseNoStatus = 1005;  // never sent: "the close frame had no code"
inline constexpr std::uint16_t kCloseAbnormal = 1006;  // never sent: "no close frame at all"
inline constexpr std::uint16_t kCloseInvalidPayload = 1007;  // e.g. text that is not UTF-8
inline constexpr std::uint16_t kClosePolicyViolation = 1008;
inline constexpr std::uint16_t kCloseMessageTooBig = 1009;
inline constexpr std::uint16_t kCloseMandatoryExtension = 1010;
inline constexpr std::uint16_t kCloseInternalError = 1011;
// Registered with IANA since RFC 6455 (which leaves 1000-2999 to IANA,
// 7.4.2): valid on the wire both ways.
// "Service restart": a restart's successor took over (net/restart.h) and the
// client should reconnect now (ws::Client and heartwheel-load do, and do not
// count it as an error).
inline constexpr std::uint16_t kCloseServiceRestart = 1012;
// "Try again later": the server is overloaded; come back after a while.
inline constexpr std::uint16_t kCloseTryAgainLater = 1013;
// "Bad gateway": a gateway or proxy got an invalid answer upstream.
inline constexpr std::uint16_t kCloseBadGateway = 1014;

// True for the codes a close frame may carry: 1000-1003, 1007-1014 and
// 3000-4999. Everything else is a protocol error (1002) when received, and
// Session::close refuses to send it: 0-999, 1004 (reserved), 1005 and 1006
// (they describe a close, never on the wire), 1015 (TLS failure: never on
// the wire either, RFC 6455 7.4.1), 1016-2999 (unassigned), 5000 and above.
// Autobahn|Testsuite's case 7.9.x (invalid codes) listed 1012-1015 up to
// 0.7.4; 0.7.5 (2016) dropped 1012 and 1013, 0.8.1 (2018) 1014 and 1015, and
// every release since (25.10.1 included) lists 0, 999, 1004, 1005, 1006,
// 1016, 1100, 2000 and 2999 only: accepting 1012-1014 passes them all, fails
// 0.8.0 and older (tests/unit/ws_autobahn_close_test.cpp).
bool is_valid_close_code(std::uint16_t code) noexcept;

inline constexpr std::size_t kMaxControlPayload = 125;
inline constexpr std::size_t kMaxCloseReason = kMaxControlPayload - 2;  // after the code
inline constexpr std::size_t kMaxFrameHeaderSize = 14;                  // 2 + 8 (length) + 4 (mask)

// RSV1 in byte 0: permessage-deflate's "Per-Message Compressed" bit (RFC
// 7692 6), set on the first frame of a compressed message only.
inline constexpr std::uint8_t kCompressedBit = 0x40;

using MaskKey = std::array<std::uint8_t, 4>;

// XORs `size` bytes at `data` with `key`, as if they started at payload offset
// `offset` (so a payload unmasked in pieces gives the same bytes). Masking and
// unmasking are the same operation.
void apply_mask(char* data, std::size_t size, MaskKey key, std::size_t offset = 0) noexcept;

// Bytes of the header of a frame with `payload_size` bytes: 2, 4 or 10, plus 4
// when masked.
constexpr std::size_t frame_header_size(std::uint64_t payload_size, bool masked) noexcept {
  return (payload_size < 126 ? 2 : payload_size <= 0xFFFF ? 4 : 10) + (masked ? 4 : 0);
}

// Writes a frame header to `out` (room for kMaxFrameHeaderSize bytes) and
// returns its size. With `mask`, sets the MASK bit and writes the key; the
// caller masks the payload (apply_mask). Does not check control-frame rules.
std::size_t write_frame_header(char* out, Opcode op, std::uint64_t payload_size, bool fin = true,
                               const MaskKey* mask = nullptr) noexcept;

// Appends one unmasked frame (server to client) to `out`.
void append_frame(std::string& out, Opcode op, std::string_view payload, bool fin = true);
// Appends one masked frame (client to server) to `out`, masked with `mask`.
void append_masked_frame(std::string& out, Opcode op, std::string_view payload, MaskKey mask,
                         bool fin = true);
// One unmasked frame as a new string.
std::string encode_frame(Opcode op, std::string_view payload, bool fin = true);

// A complete frame's bytes, encoded once and shared by every session that
// sends it. Never null when returned by encode_shared.
using SharedFrame = std::shared_ptr<const std::string>;
// One unmasked, unfragmented frame in a shared buffer (a publication).
SharedFrame encode_shared(Opcode op, std::string_view payload);

// The payload of a close frame: the code (big-endian) and the reason, cut to
// kMaxCloseReason bytes without splitting a UTF-8 character. Does not check
// the code (see is_valid_close_code).
std::string close_payload(std::uint16_t code, std::string_view reason = {});

}  // namespace heartwheel::ws
