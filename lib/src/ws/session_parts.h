// The parts of a ws::Session that exist only while needed (session.h,
// "Cost"): the message being received and the rarely used extras, and the
// bits of its compression byte. Private to lib/src/ws.
#pragma once

#include <heartwheel/ws/session.h>

#include <memory>
#include <string>

#include "zstream.h"

namespace heartwheel::ws {

// Session::deflate_.
inline constexpr std::uint8_t kDeflateOn = 0x80;
inline constexpr std::uint8_t kSendContext = 0x40;     // our deflate stream lives on
inline constexpr std::uint8_t kReceiveContext = 0x20;  // the peer's: our inflate stream lives on
inline constexpr std::uint8_t kWindowMask = 0x0F;      // our window bits, 8..15
inline constexpr std::uint8_t kRsv1 = 0x4;             // FrameHeader::rsv's RSV1

// Allocated at a message's first frame (or when bytes wait for a turn),
// freed when neither is left.
struct Session::Incoming {
  std::string payload;  // the message so far (inflated, if compressed)
  // Inflating this message: lent by the pool, or the context's own. Null:
  // not compressed.
  detail::Inflater* inflater = nullptr;
  // Bytes fed after a yield_turn(), waiting for resume().
  std::unique_ptr<std::string> held;
};

// A connection with context takeover's own streams, made at first use (its
// first compressed message: an idle connection has neither).
struct DeflateContext {
  std::unique_ptr<detail::Deflater> deflater;
  std::unique_ptr<detail::Inflater> inflater;
};

// Allocated at the first control frame with a payload, or the first
// compressed message with context takeover; kept.
struct Session::Extras {
  char control[kMaxControlPayload];
  // The payload of a pong held back (session.h, "Pongs"), while other
  // control frames arrive in `control`: made the first time one is.
  std::unique_ptr<char[]> owed_pong;
  std::unique_ptr<DeflateContext> context;
};

}  // namespace heartwheel::ws
