// The receiving half of ws::Session: frames in, messages and control events
// out, protocol errors. See heartwheel/ws/session.h.
#include <heartwheel/ws/session.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace heartwheel::ws {

void SessionOptions::validate() const {
  if (max_message_bytes == 0)
    throw std::invalid_argument("ws::SessionOptions: max_message_bytes must be > 0");
}

Session::Session(Transport& transport, Handler& handler, const SessionOptions& options)
    : transport_(transport), handler_(handler), options_(options), parser_(options.role) {
  options_.validate();
}

namespace {
// Marks a feed() in progress, also when a callback throws.
struct FeedScope {
  explicit FeedScope(bool& flag) : flag_(flag) { flag_ = true; }
  ~FeedScope() { flag_ = false; }
  FeedScope(const FeedScope&) = delete;
  FeedScope& operator=(const FeedScope&) = delete;
  bool& flag_;
};
}  // namespace

void Session::feed(std::string_view in) {
  assert(!in_feed_ && "ws::Session::feed called from one of its own callbacks");
  const FeedScope scope(in_feed_);
  while (state_ != State::closed) {
    if (!frame_open_) {
      const auto status = parser_.read_header(in);
      if (status == FrameParser::Status::need_more) break;
      if (status == FrameParser::Status::error) {
        fail(kCloseProtocolError, parser_.error());
        break;
      }
      if (!begin_frame()) break;
      frame_open_ = true;
    }
    if (!read_payload(in)) break;
    if (parser_.remaining() > 0) break;  // `in` is used up mid-payload
    frame_open_ = false;
    end_frame();
  }
}

// A header was read: check the message limit and prepare the buffer.
bool Session::begin_frame() {
  const FrameHeader& h = parser_.header();
  if (is_control(h.opcode)) {
    control_size_ = 0;
    if (h.payload_length > 0 && !control_) control_ = std::make_unique<char[]>(kMaxControlPayload);
    return true;
  }
  if (h.opcode != Opcode::continuation) utf8_.reset();  // a new message
  if (!message_) message_ = std::make_unique<std::string>();  // session.h: only while in use
  std::string& message = *message_;
  const std::size_t held = message.size();
  if (h.payload_length > options_.max_message_bytes - held) {
    fail(kCloseMessageTooBig, "message above max_message_bytes");
    return false;
  }
  const std::size_t total = held + static_cast<std::size_t>(h.payload_length);
  if (total > message.capacity()) {
    // A single-frame message gets its exact size: one copy, no re-growth.
    // Fragments grow geometrically (bounded by the limit).
    std::size_t want = total;
    if (h.opcode == Opcode::continuation || !h.fin)
      want = std::max(total, std::min(options_.max_message_bytes, 2 * message.capacity()));
    message.reserve(want);
  }
  return true;
}

// Moves the payload bytes available in `in`; text is validated as it comes.
bool Session::read_payload(std::string_view& in) {
  if (is_control(parser_.header().opcode)) {
    control_size_ = static_cast<std::uint8_t>(
        control_size_ + parser_.read_payload(in, control_.get() + control_size_));
    return true;
  }
  std::string& message = *message_;  // begin_frame made it
  const std::size_t start = message.size();
  const std::size_t n = parser_.read_payload(in, message);
  if (n > 0 && parser_.message_opcode() == Opcode::text &&
      !utf8_.feed(std::string_view(message.data() + start, n))) {
    fail(kCloseInvalidPayload, "text message is not valid UTF-8");
    return false;
  }
  return true;
}

void Session::end_frame() {
  const FrameHeader& h = parser_.header();
  switch (h.opcode) {
    case Opcode::ping:
      if (state_ == State::open) answer_ping();  // may move control_: the view is made after
      handler_.on_ping(*this, std::string_view(control_.get(), control_size_));
      return;
    case Opcode::pong:
      handler_.on_pong(*this, std::string_view(control_.get(), control_size_));
      return;
    case Opcode::close:
      on_close_frame();
      return;
    case Opcode::continuation:
    case Opcode::text:
    case Opcode::binary:
      if (h.fin) end_message();
      return;
  }
}

// The ping just read (in control_): its pong now, or held back while the
// transport is backlogged (session.h, "Pongs").
void Session::answer_ping() {
  const std::string_view payload(control_.get(), control_size_);
  if (!transport_.backlogged()) {
    owed_pong_ = 0;  // this pong answers every earlier ping too
    send_frame(Opcode::pong, payload);
    return;
  }
  if (!payload.empty() && !control_wide_) {
    auto wide = std::make_unique<char[]>(2 * kMaxControlPayload);
    std::copy(payload.begin(), payload.end(), wide.get());
    control_ = std::move(wide);
    control_wide_ = true;
  }
  if (!payload.empty())
    std::copy_n(control_.get(), payload.size(), control_.get() + kMaxControlPayload);
  owed_pong_ = static_cast<std::uint8_t>(payload.size() + 1);
}

void Session::end_message() {
  const bool text = parser_.message_opcode() == Opcode::text;
  if (text && !utf8_.complete()) {
    fail(kCloseInvalidPayload, "text message ends inside a UTF-8 character");
    return;
  }
  const MessageType type = text ? MessageType::text : MessageType::binary;
  if (close_sent())  // we are closing: nothing the peer says now is acted on
    handler_.on_discarded(*this, type, message_->size());
  else
    handler_.on_message(*this, type, *message_);
  // The handler may have moved the buffer out; either way start empty, and
  // give back memory an idle connection should not hold: the string itself
  // too, unless retained_buffer_bytes asks to keep a buffer. (finish() may
  // have run inside on_message: it emptied the string but kept it, since
  // the handler's reference pointed into it.)
  if (options_.retained_buffer_bytes == 0 ||
      message_->capacity() > options_.retained_buffer_bytes)
    message_.reset();
  else
    message_->clear();
}

void Session::on_close_frame() {
  const std::string_view payload(control_.get(), control_size_);
  std::uint16_t code = kCloseNoStatus;
  std::string_view reason;
  if (payload.size() == 1) return fail(kCloseProtocolError, "close frame with a 1-byte payload");
  if (payload.size() >= 2) {
    code = static_cast<std::uint16_t>((static_cast<unsigned char>(payload[0]) << 8) |
                                      static_cast<unsigned char>(payload[1]));
    if (!is_valid_close_code(code)) return fail(kCloseProtocolError, "invalid close code");
    reason = payload.substr(2);
    if (!is_valid_utf8(reason))
      return fail(kCloseInvalidPayload, "close reason is not valid UTF-8");
  }
  received_code_ = code;
  // Answer with the same code (an empty close with an empty one).
  if (!close_sent()) send_close(code, payload.substr(0, payload.empty() ? 0 : 2));
  state_ = State::closed;
  handler_.on_close(*this, code, reason);
  finish();
}

void Session::fail(std::uint16_t code, const char* what) {
  if (state_ == State::closed) return;
  failed_ = true;
  if (!close_sent()) send_close(code, close_payload(code));
  state_ = State::closed;
  handler_.on_protocol_error(*this, code, what);
  finish();
}

// Leaves nothing behind: the connection is over.
void Session::finish() {
  frame_open_ = false;
  // Emptied, not freed: finish() may run inside on_message, whose payload
  // reference is this string (end_message frees it afterwards; the
  // destructor otherwise).
  if (message_) std::string().swap(*message_);
  transport_.close();
}

}  // namespace heartwheel::ws
