// The receiving half of ws::Session: frames in, messages and control events
// out, protocol errors. Compressed messages are session_deflate.cpp's. See
// heartwheel/ws/session.h.
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/session.h>
#include <heartwheel/ws/stats.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "session_parts.h"

namespace heartwheel::ws {

void SessionOptions::validate() const {
  if (max_message_bytes == 0)
    throw std::invalid_argument("ws::SessionOptions: max_message_bytes must be > 0");
}

Session::Session(SessionOwner& owner, const SessionOptions& options)
    : owner_(owner), options_(options), parser_(options.role) {
  options_.validate();
}

Session::~Session() { release_inflater(); }

std::size_t Session::buffered() const noexcept { return message_ ? message_->payload.size() : 0; }

bool Session::waiting_turn() const noexcept { return message_ && message_->held; }

Session::Extras& Session::extras() {
  if (!extras_) extras_ = std::make_unique<Extras>();
  return *extras_;
}

std::string_view Session::control_payload() const noexcept {
  return extras_ ? std::string_view(extras_->control, control_size_) : std::string_view();
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
  if (state_ == State::closed) return;
  if (waiting_turn()) {  // behind the bytes that wait for their turn
    message_->held->append(in);
    return;
  }
  run(in);
}

void Session::resume() {
  assert(!in_feed_ && "ws::Session::resume called from one of its own callbacks");
  if (!waiting_turn()) return;
  const FeedScope scope(in_feed_);
  const std::unique_ptr<std::string> held = std::move(message_->held);
  if (state_ != State::closed) run(*held);  // may hold its rest again (a copy)
  tidy_incoming();
}

// Keeps the bytes not read yet for the turn the transport gave.
void Session::hold(std::string_view rest) {
  if (!message_) message_ = std::make_unique<Incoming>();
  message_->held = std::make_unique<std::string>(rest);
}

void Session::run(std::string_view in) {
  std::size_t inflated = 0;  // by this call: bounded by inflate_budget
  while (state_ != State::closed) {
    if (!frame_open_) {
      // A frame boundary: the place to let the loop's other connections in
      // once this read has inflated its share (inflated > 0: a pool exists).
      if (inflated > 0 && !in.empty() &&
          inflated >= transport().deflate_pool()->options().inflate_budget &&
          transport().yield_turn()) {
        ++transport().deflate_pool()->stats().inflate_yields;
        hold(in);
        return;
      }
      const auto status = parser_.read_header(in);
      if (status == FrameParser::Status::need_more) break;
      if (status == FrameParser::Status::error) {
        fail(kCloseProtocolError, parser_.error());
        break;
      }
      if (!begin_frame()) break;
      frame_open_ = true;
    }
    if (!read_payload(in, inflated)) break;
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
    if (h.payload_length > 0) (void)extras();
    return true;
  }
  if (h.opcode != Opcode::continuation) utf8_.reset();  // a new message
  if (!message_) message_ = std::make_unique<Incoming>();  // session.h: only while in use
  // Compressed: its limit is on what it inflates to (checked as it does).
  if ((h.rsv & kRsv1) != 0) return begin_compressed();
  if (message_->inflater != nullptr) return true;  // a continuation of one
  std::string& message = message_->payload;
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
bool Session::read_payload(std::string_view& in, std::size_t& inflated) {
  if (is_control(parser_.header().opcode)) {
    if (parser_.remaining() == 0) return true;  // no payload (no Extras needed)
    control_size_ = static_cast<std::uint8_t>(
        control_size_ + parser_.read_payload(in, extras_->control + control_size_));
    return true;
  }
  if (message_->inflater != nullptr) return inflate_payload(in, inflated);
  std::string& message = message_->payload;  // begin_frame made it
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
  const std::string_view payload = control_payload();
  switch (h.opcode) {
    case Opcode::ping:
      if (state_ == State::open) answer_ping();
      handler().on_ping(*this, payload);
      return;
    case Opcode::pong:
      handler().on_pong(*this, payload);
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

// The ping just read (in the extras' control buffer): its pong now, or held
// back while the transport is backlogged (session.h, "Pongs").
void Session::answer_ping() {
  const std::string_view payload = control_payload();
  if (!transport().backlogged()) {
    owed_pong_ = 0;  // this pong answers every earlier ping too
    send_frame(Opcode::pong, payload);
    return;
  }
  if (!payload.empty()) {
    Extras& e = extras();  // there already: the ping's payload is in it
    if (!e.owed_pong) e.owed_pong = std::make_unique<char[]>(kMaxControlPayload);
    std::copy(payload.begin(), payload.end(), e.owed_pong.get());
  }
  owed_pong_ = static_cast<std::uint8_t>(payload.size() + 1);
}

void Session::end_message() {
  if (message_->inflater != nullptr && !finish_inflating()) return;
  const bool text = parser_.message_opcode() == Opcode::text;
  if (text && !utf8_.complete()) {
    fail(kCloseInvalidPayload, "text message ends inside a UTF-8 character");
    return;
  }
  const MessageType type = text ? MessageType::text : MessageType::binary;
  if (close_sent())  // we are closing: nothing the peer says now is acted on
    handler().on_discarded(*this, type, message_->payload.size());
  else
    handler().on_message(*this, type, message_->payload);
  // The handler may have moved the buffer out; either way start empty, and
  // give back memory an idle connection should not hold: the string itself
  // too, unless retained_buffer_bytes asks to keep a buffer. (finish() may
  // have run inside on_message: it emptied the string but kept it, since
  // the handler's reference pointed into it.)
  if (options_.retained_buffer_bytes == 0 ||
      message_->payload.capacity() > options_.retained_buffer_bytes)
    std::string().swap(message_->payload);
  else
    message_->payload.clear();
  tidy_incoming();
}

// Frees the Incoming when it holds nothing worth keeping: no message under
// way, no bytes waiting, no buffer retained_buffer_bytes keeps.
void Session::tidy_incoming() noexcept {
  if (!message_ || message_->held || message_->inflater != nullptr || frame_open_ ||
      parser_.in_message())
    return;
  if (message_->payload.capacity() > std::string().capacity() &&
      message_->payload.capacity() <= options_.retained_buffer_bytes && state_ != State::closed)
    return;
  message_.reset();
}

void Session::on_close_frame() {
  const std::string_view payload = control_payload();
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
  handler().on_close(*this, code, reason);
  finish();
}

void Session::fail(std::uint16_t code, const char* what) {
  if (state_ == State::closed) return;
  failed_ = true;
  if (!close_sent()) send_close(code, close_payload(code));
  state_ = State::closed;
  handler().on_protocol_error(*this, code, what);
  finish();
}

// Leaves nothing behind: the connection is over.
void Session::finish() {
  frame_open_ = false;
  release_inflater();
  // Emptied, not freed: finish() may run inside on_message, whose payload
  // reference is this string (end_message frees it afterwards; the
  // destructor otherwise).
  if (message_) {
    std::string().swap(message_->payload);
    message_->held.reset();
  }
  transport().close();
}

}  // namespace heartwheel::ws
