// The sending half of ws::Session: messages, control frames, the close
// handshake and the client's masking. See heartwheel/ws/session.h.
#include <heartwheel/common/error.h>
#include <heartwheel/ws/session.h>

#include <random>

#include "session_parts.h"

namespace heartwheel::ws {

namespace {

// splitmix64: one multiply-xorshift chain per key. Seeded once per thread, so
// the default mask source costs no system call per frame.
MaskKey default_mask_key() {
  thread_local std::uint64_t state = [] {
    std::random_device rd;
    return (std::uint64_t{rd()} << 32) ^ rd();
  }();
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return MaskKey{static_cast<std::uint8_t>(z), static_cast<std::uint8_t>(z >> 8),
                 static_cast<std::uint8_t>(z >> 16), static_cast<std::uint8_t>(z >> 24)};
}

}  // namespace

void Session::send_frame(Opcode op, std::string_view payload, bool compressed) {
  char head[kMaxFrameHeaderSize];
  if (options_.role == Role::server) {
    const std::size_t n = write_frame_header(head, op, payload.size());
    if (compressed) head[0] = static_cast<char>(head[0] | kCompressedBit);
    transport().send(std::string_view(head, n), payload);
    return;
  }
  const MaskKey key = options_.mask_key_source ? options_.mask_key_source() : default_mask_key();
  const std::size_t n = write_frame_header(head, op, payload.size(), true, &key);
  if (compressed) head[0] = static_cast<char>(head[0] | kCompressedBit);
  std::string masked(payload);  // client role only (tests, tools): one copy per frame
  apply_mask(masked.data(), masked.size(), key);
  transport().send(std::string_view(head, n), masked);
}

void Session::send_close(std::uint16_t code, std::string_view payload) {
  send_frame(Opcode::close, payload);
  sent_code_ = code;
}

std::error_code Session::send(MessageType type, std::string_view payload) {
  if (close_sent() || state_ == State::closed) return errc::closed;
  send_message(type == MessageType::text ? Opcode::text : Opcode::binary, payload);
  return {};
}

std::error_code Session::send_shared(const SharedFrame& frame) {
  if (!frame || options_.role != Role::server) return errc::invalid_argument;
  if (close_sent() || state_ == State::closed) return errc::closed;
  if (deflate_ != 0)
    send_shared_compressed(frame);
  else
    transport().send_shared(frame);
  return {};
}

std::error_code Session::ping(std::string_view payload) {
  if (close_sent() || state_ == State::closed) return errc::closed;
  if (payload.size() > kMaxControlPayload) return errc::invalid_argument;
  send_frame(Opcode::ping, payload);
  return {};
}

std::error_code Session::pong(std::string_view payload) {
  if (close_sent() || state_ == State::closed) return errc::closed;
  if (payload.size() > kMaxControlPayload) return errc::invalid_argument;
  send_frame(Opcode::pong, payload);
  return {};
}

void Session::send_owed_pong() {
  if (owed_pong_ == 0) return;
  const std::size_t size = owed_pong_ - 1u;
  owed_pong_ = 0;
  if (close_sent() || state_ == State::closed) return;
  send_frame(Opcode::pong, std::string_view(size > 0 ? extras_->owed_pong.get() : nullptr, size));
}

std::error_code Session::close(std::uint16_t code, std::string_view reason) {
  if (close_sent() || state_ == State::closed) return errc::closed;
  if (!is_valid_close_code(code)) return errc::invalid_argument;
  send_close(code, close_payload(code, reason));
  state_ = State::closing;
  return {};
}

}  // namespace heartwheel::ws
