// ws::Session's compressed messages (permessage-deflate, RFC 7692): turning
// it on, inflating what arrives (the limit on inflated bytes, UTF-8 on
// them), compressing what is sent, shared frames. See heartwheel/ws/session.h
// ("Compression") and heartwheel/ws/deflate_pool.h.
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/session.h>
#include <heartwheel/ws/stats.h>

#include <algorithm>
#include <stdexcept>

#include "frame_view.h"
#include "session_parts.h"

namespace heartwheel::ws {

namespace {
// Compressed payload bytes unmasked per inflate call (a stack buffer).
constexpr std::size_t kInflateChunk = 16 * 1024;

int bits_or_15(std::uint8_t bits) noexcept { return bits == 0 ? 15 : bits; }
}  // namespace

void Session::use_deflate(const DeflateParams& p) {
  if (!p.enabled) return;
  if (transport().deflate_pool() == nullptr)
    throw std::invalid_argument("ws::Session::use_deflate: the transport has no DeflatePool");
  const bool server = options_.role == Role::server;
  const bool send_context = !(server ? p.server_no_context_takeover : p.client_no_context_takeover);
  const bool receive_context =
      !(server ? p.client_no_context_takeover : p.server_no_context_takeover);
  const int send_bits = bits_or_15(server ? p.server_max_window_bits : p.client_max_window_bits);
  deflate_ = static_cast<std::uint8_t>(kDeflateOn | (send_context ? kSendContext : 0) |
                                       (receive_context ? kReceiveContext : 0) | send_bits);
  parser_.set_allowed_rsv(kRsv1);
}

// The streams of a side with context takeover: made at its first use, so
// an idle connection holds none (nor the block that keeps them).
DeflateContext& Session::context() {
  Extras& e = extras();
  if (!e.context) e.context = std::make_unique<DeflateContext>();
  return *e.context;
}

// The first frame of a compressed message: a stream to inflate it with.
bool Session::begin_compressed() {
  if ((deflate_ & kReceiveContext) != 0) {
    DeflateContext& c = context();
    // 15 bits whatever the peer's window: zlib does not hold a stream to a
    // smaller one (a distance past it resolves from the output of the same
    // call), so a smaller window would fail or pass a peer that oversteps
    // it depending on how its bytes arrive. (A server of ours never agrees
    // to a client's context: deflate.h.)
    if (!c.inflater) c.inflater = std::make_unique<detail::Inflater>(15);
    message_->inflater = c.inflater.get();
  } else {
    message_->inflater = transport().deflate_pool()->borrow_inflater();
  }
  return true;
}

// Inflates the payload bytes available in `in` into the message, at most
// max_message_bytes of them; text is validated as it comes.
bool Session::inflate_payload(std::string_view& in, std::size_t& inflated) {
  Incoming& m = *message_;
  Stats& stats = transport().deflate_pool()->stats();
  char chunk[kInflateChunk];
  while (parser_.remaining() > 0 && !in.empty()) {
    std::string_view part = in.substr(0, kInflateChunk);
    const std::size_t n = parser_.read_payload(part, chunk);
    in.remove_prefix(n);
    stats.compressed_received_compressed_bytes += n;
    const std::size_t start = m.payload.size();
    const auto result =
        m.inflater->inflate(std::string_view(chunk, n), m.payload, options_.max_message_bytes);
    inflated += m.payload.size() - start;
    if (!judge_inflated(start, result)) return false;
  }
  return true;
}

// What one inflate call appended from `start` on, and how it ended, judged
// in the order the bytes came (so any split of the input gives the same
// verdict): text that is not UTF-8 within the limit first, then the limit,
// then bad DEFLATE.
bool Session::judge_inflated(std::size_t start, detail::InflateResult result) {
  const std::string& payload = message_->payload;
  if (parser_.message_opcode() == Opcode::text && payload.size() > start &&
      !utf8_.feed(std::string_view(payload).substr(start))) {
    fail(kCloseInvalidPayload, "text message is not valid UTF-8");
    return false;
  }
  if (result == detail::Inflater::Result::too_big) {
    fail(kCloseMessageTooBig, "inflated message above max_message_bytes");
    return false;
  }
  if (result == detail::Inflater::Result::bad_data) {
    fail(kCloseInvalidPayload, "compressed message is not DEFLATE");
    return false;
  }
  return true;
}

// The message's last frame is in: its stream gets the 00 00 ff ff the
// sender cut off, and goes back (or stays, with context).
bool Session::finish_inflating() {
  Incoming& m = *message_;
  const std::size_t start = m.payload.size();
  const auto result = m.inflater->inflate(std::string_view(detail::kDeflateTail, 4), m.payload,
                                          options_.max_message_bytes);
  if (!judge_inflated(start, result)) return false;
  release_inflater();
  Stats& stats = transport().deflate_pool()->stats();
  ++stats.compressed_messages_received;
  stats.compressed_received_uncompressed_bytes += m.payload.size();
  return true;
}

// A lent stream goes back to its pool (reset); a context's own stays.
void Session::release_inflater() noexcept {
  if (!message_ || message_->inflater == nullptr) return;
  detail::Inflater* inflater = message_->inflater;
  message_->inflater = nullptr;
  if (inflater->pool != nullptr) inflater->pool->give_back(inflater);
}

void Session::send_message(Opcode op, std::string_view payload) {
  DeflatePool* pool = deflate_ != 0 ? transport().deflate_pool() : nullptr;
  const int bits = deflate_ & kWindowMask;
  // zlib cannot keep to an 8-bit window: such a peer gets plain messages.
  if (pool == nullptr || bits < 9) return send_frame(op, payload);
  Stats& stats = pool->stats();
  if (payload.size() < pool->options().min_size) {
    ++stats.compression_skipped_small;
    return send_frame(op, payload);
  }
  std::string& out = pool->scratch_;
  out.clear();
  if ((deflate_ & kSendContext) != 0) {
    DeflateContext& c = context();
    if (!c.deflater)
      c.deflater = std::make_unique<detail::Deflater>(pool->options().level, bits,
                                                      pool->options().mem_level);
    c.deflater->compress(payload, out);
    ++stats.deflate_calls;
    // Sent compressed even when no smaller: the peer's window must see
    // every byte our stream saw.
  } else {
    pool->compress(payload, out, bits);
    if (out.size() >= payload.size()) {
      ++stats.compression_skipped_incompressible;
      return send_frame(op, payload);
    }
  }
  ++stats.compressed_messages_sent;
  stats.compressed_sent_uncompressed_bytes += payload.size();
  stats.compressed_sent_compressed_bytes += out.size();
  send_frame(op, out, true);
}

SharedFrame Session::wire_frame(const SharedFrame& frame) {
  if (deflate_ == 0) return frame;
  if ((deflate_ & kSendContext) != 0) return nullptr;
  const int bits = deflate_ & kWindowMask;
  if (bits < 9) return frame;
  DeflatePool& pool = *transport().deflate_pool();
  const DeflatePool::Remembered& r = pool.remember(frame, bits);
  if (r.compressed != 0) {
    Stats& stats = pool.stats();
    ++stats.compressed_messages_sent;
    stats.compressed_sent_uncompressed_bytes += r.uncompressed;
    stats.compressed_sent_compressed_bytes += r.compressed;
  }
  return r.result;
}

void Session::send_shared_compressed(const SharedFrame& frame) {
  if (SharedFrame wire = wire_frame(frame)) return transport().send_shared(wire);
  // Our own stream: the publication is compressed for this peer alone.
  const detail::DataFrame d = detail::data_frame(*frame);
  if (!d.ok) return transport().send_shared(frame);
  send_message(d.op, d.payload);
}

}  // namespace heartwheel::ws
