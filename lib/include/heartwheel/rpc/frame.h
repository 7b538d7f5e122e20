// heartwheel/rpc/frame.h - the RPC wire format, encoded and decoded without I/O.
//
// The format (docs/rpc-protocol.md; shared with heartwheel-load --mode rpc):
//
//   frame  := length:u32be | type:u8 | id:u64be | payload[length - 9]
//
//   `length` counts type + id + payload, so it is at least 9. A length above
//   the receiver's maximum (default 1 MiB) or a type outside 1..5 is a
//   protocol error: the receiver closes that one connection.
//
//   type 1 REQUEST   client -> server, answered by a RESPONSE with the same id
//   type 2 RESPONSE  server -> client
//   type 3 PING      either way; id = the sender's sequence number, payload =
//                    8 bytes, the sender's send time in ns (big-endian)
//   type 4 PONG      the answer to a PING: same id, same payload
//   type 5 ERROR     server -> client; id of the failed request, UTF-8 text
//
// FrameDecoder is incremental: hand it whatever the socket delivered (a piece
// of a frame, several frames, both) and take frames out one at a time. A
// frame that lies entirely inside the caller's bytes is returned as a view
// into them (no copy); only a frame split across reads is assembled in the
// decoder's own buffer, which never holds more than one frame. A bad header is
// rejected as soon as its first 5 bytes are known, so a peer announcing a
// 4 GiB frame costs nothing.
//
// Threads: a decoder belongs to one connection, one thread. Encoding functions
// are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <heartwheel/common/time.h>

namespace heartwheel::rpc {

enum class FrameType : std::uint8_t {
  request = 1,
  response = 2,
  ping = 3,
  pong = 4,
  error = 5,
};

// "request", "response", ...; "invalid" for anything else.
const char* to_string(FrameType type) noexcept;
// True for the five types above.
constexpr bool is_valid_frame_type(std::uint8_t type) noexcept { return type >= 1 && type <= 5; }

inline constexpr std::size_t kLengthFieldSize = 4;
inline constexpr std::size_t kMinFrameLength = 9;                               // type + id
inline constexpr std::size_t kHeaderSize = kLengthFieldSize + kMinFrameLength;  // 13 bytes
inline constexpr std::size_t kDefaultMaxFrameLength = std::size_t{1} << 20;     // 1 MiB
inline constexpr std::size_t kPingPayloadSize = 8;

// One decoded frame. `payload` points into the bytes given to next() or into
// the decoder's buffer: valid until the next call on that decoder, or until
// those bytes go away, whichever comes first. Copy what you keep.
struct FrameView {
  FrameType type;
  std::uint64_t id;
  std::string_view payload;
};

// ---- encoding -----------------------------------------------------------------

// Appends one frame to `out`. Precondition: payload.size() <= 2^32 - 1 - 9
// (the receiver's maximum is usually far lower; staying under it is the
// sender's business).
void append_frame(std::string& out, FrameType type, std::uint64_t id, std::string_view payload);

// The same, as a new string.
std::string encode_frame(FrameType type, std::uint64_t id, std::string_view payload);

// The PING payload for a send time (nanoseconds since the clock's epoch).
std::string ping_payload(TimePoint sent_at);
// The send time a PING/PONG payload carries, or nullopt if it is not 8 bytes.
std::optional<TimePoint> ping_sent_at(std::string_view payload) noexcept;

// Big-endian helpers, exposed for the load harness and the tests.
void put_u32be(char* out, std::uint32_t v) noexcept;
void put_u64be(char* out, std::uint64_t v) noexcept;
std::uint32_t get_u32be(const char* in) noexcept;
std::uint64_t get_u64be(const char* in) noexcept;

// ---- decoding -----------------------------------------------------------------

class FrameDecoder {
 public:
  // max_frame_length: the largest `length` field accepted (type + id +
  // payload). Throws std::invalid_argument if it is below kMinFrameLength.
  explicit FrameDecoder(std::size_t max_frame_length = kDefaultMaxFrameLength);

  // Takes the next complete frame out of `input`, advancing `input` past the
  // bytes consumed. Returns nullopt when `input` is used up without completing
  // a frame (the partial frame is kept; call again with the next bytes), or on
  // a protocol error, which sets `error`:
  //   errc::frame_too_large  length above the maximum
  //   errc::protocol_error   length below 9, or an unknown type
  // After an error the decoder stays failed (every later call returns the
  // same error) and the connection should be closed: the stream has no
  // resynchronisation point.
  // Typical use, in on_data:
  //   std::string_view in = data; std::error_code ec;
  //   while (auto f = decoder.next(in, ec)) handle(*f);
  //   if (ec) conn.close(CloseReason::error, ec);
  std::optional<FrameView> next(std::string_view& input, std::error_code& error);

  // Bytes of an incomplete frame held since the last call.
  std::size_t buffered() const noexcept { return pending_release_ ? 0 : buffer_.size(); }
  bool failed() const noexcept { return static_cast<bool>(error_); }
  std::size_t max_frame_length() const noexcept { return max_length_; }
  // Frees the buffer's memory if it has grown beyond `keep` bytes and is idle
  // (so one large frame does not pin memory on a long-lived connection).
  void shrink(std::size_t keep = 4096);

 private:
  std::error_code check_header(const char* header, std::size_t available) noexcept;
  std::optional<FrameView> fail(std::error_code ec, std::error_code& out) noexcept;

  std::size_t max_length_;
  std::string buffer_;     // a partial frame; emptied when handed out
  bool pending_release_ = false;  // buffer_ held the frame returned last time
  std::error_code error_;
};

}  // namespace heartwheel::rpc
