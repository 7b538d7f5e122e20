// See heartwheel/rpc/frame.h.
#include <heartwheel/rpc/frame.h>

#include <algorithm>
#include <stdexcept>

#include <heartwheel/common/error.h>

namespace heartwheel::rpc {

const char* to_string(FrameType type) noexcept {
  switch (type) {
    case FrameType::request: return "request";
    case FrameType::response: return "response";
    case FrameType::ping: return "ping";
    case FrameType::pong: return "pong";
    case FrameType::error: return "error";
  }
  return "invalid";
}

void put_u32be(char* out, std::uint32_t v) noexcept {
  for (int i = 3; i >= 0; --i, v >>= 8) out[i] = static_cast<char>(v & 0xff);
}

void put_u64be(char* out, std::uint64_t v) noexcept {
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<char>(v & 0xff);
}

std::uint32_t get_u32be(const char* in) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

std::uint64_t get_u64be(const char* in) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

void append_frame(std::string& out, FrameType type, std::uint64_t id, std::string_view payload) {
  char header[kHeaderSize];
  put_u32be(header, static_cast<std::uint32_t>(kMinFrameLength + payload.size()));
  header[kLengthFieldSize] = static_cast<char>(type);
  put_u64be(header + kLengthFieldSize + 1, id);
  out.reserve(out.size() + kHeaderSize + payload.size());
  out.append(header, kHeaderSize);
  out.append(payload);
}

std::string encode_frame(FrameType type, std::uint64_t id, std::string_view payload) {
  std::string out;
  append_frame(out, type, id, payload);
  return out;
}

std::string ping_payload(TimePoint sent_at) {
  std::string out(kPingPayloadSize, '\0');
  put_u64be(out.data(), static_cast<std::uint64_t>(sent_at.time_since_epoch().count()));
  return out;
}

std::optional<TimePoint> ping_sent_at(std::string_view payload) noexcept {
  if (payload.size() != kPingPayloadSize) return std::nullopt;
  return TimePoint(Duration(static_cast<Duration::rep>(get_u64be(payload.data()))));
}

FrameDecoder::FrameDecoder(std::size_t max_frame_length) : max_length_(max_frame_length) {
  if (max_length_ < kMinFrameLength || max_length_ > 0xffffffffu)
    throw std::invalid_argument("rpc frame decoder: the maximum frame length must be between 9 and "
                                "2^32 - 1 bytes (it counts type + id + payload)");
}

// `available` >= kLengthFieldSize bytes of a frame start at `header`.
std::error_code FrameDecoder::check_header(const char* header, std::size_t available) noexcept {
  const std::uint32_t length = get_u32be(header);
  if (length < kMinFrameLength) return errc::protocol_error;
  if (length > max_length_) return errc::frame_too_large;
  if (available > kLengthFieldSize &&
      !is_valid_frame_type(static_cast<std::uint8_t>(header[kLengthFieldSize])))
    return errc::protocol_error;
  return {};
}

std::optional<FrameView> FrameDecoder::fail(std::error_code ec, std::error_code& out) noexcept {
  error_ = ec;
  out = ec;
  buffer_.clear();
  return std::nullopt;
}

namespace {
FrameView view_of(const char* frame, std::size_t total) noexcept {
  return FrameView{static_cast<FrameType>(frame[kLengthFieldSize]),
                   get_u64be(frame + kLengthFieldSize + 1),
                   std::string_view(frame + kHeaderSize, total - kHeaderSize)};
}
}  // namespace

std::optional<FrameView> FrameDecoder::next(std::string_view& input, std::error_code& error) {
  error.clear();
  if (error_) {
    error = error_;
    return std::nullopt;
  }
  if (pending_release_) {  // the frame handed out last time lived in buffer_
    buffer_.clear();
    pending_release_ = false;
  }

  // Fast path: a whole frame at the front of the caller's bytes, no copy.
  if (buffer_.empty()) {
    if (input.size() < kLengthFieldSize) {
      buffer_.append(input);
      input = {};
      return std::nullopt;
    }
    if (auto ec = check_header(input.data(), input.size())) return fail(ec, error);
    const std::size_t total = kLengthFieldSize + get_u32be(input.data());
    if (input.size() >= total) {
      const FrameView frame = view_of(input.data(), total);
      input.remove_prefix(total);
      return frame;
    }
  }

  // Slow path: assemble a split frame in buffer_, the length field first.
  if (buffer_.size() < kLengthFieldSize) {
    const std::size_t take = std::min(input.size(), kLengthFieldSize - buffer_.size());
    buffer_.append(input.substr(0, take));
    input.remove_prefix(take);
    if (buffer_.size() < kLengthFieldSize) return std::nullopt;
  }
  const std::size_t total = kLengthFieldSize + get_u32be(buffer_.data());
  if (auto ec = check_header(buffer_.data(), buffer_.size())) return fail(ec, error);
  const std::size_t take = std::min(input.size(), total - buffer_.size());
  buffer_.append(input.substr(0, take));
  input.remove_prefix(take);
  if (auto ec = check_header(buffer_.data(), buffer_.size())) return fail(ec, error);  // the type byte
  if (buffer_.size() < total) return std::nullopt;
  pending_release_ = true;
  return view_of(buffer_.data(), total);
}

void FrameDecoder::shrink(std::size_t keep) {
  if (buffer_.empty() && buffer_.capacity() > keep) std::string().swap(buffer_);
}

}  // namespace heartwheel::rpc
