// heartwheel/ws/deflate.h - permessage-deflate (RFC 7692): the policy, the
// negotiation in the opening handshake, and the parameters both ends agreed.
//
// What it is
//   WebSocket's compression extension: a message is compressed as a whole
//   (raw DEFLATE, its trailing 00 00 ff ff cut off) and its first frame
//   carries RSV1; control frames and uncompressed messages travel as before.
//   This header decides WHETHER and HOW a connection compresses: a server's
//   policy (DeflateOptions), its answer to a client's offers
//   (negotiate_deflate, called by ws::accept_handshake), a client's offer
//   and its check of the server's answer (deflate_offer,
//   accept_deflate_response). The compressing itself is zlib's, run by a
//   per-loop ws::DeflatePool (heartwheel/ws/deflate_pool.h) for the
//   ws::Session that negotiated it (Session::use_deflate).
//
// Memory policy (why the defaults are what they are)
//   With "context takeover" each end keeps its zlib stream from one message
//   to the next: better ratios, but zlib's deflate state is ~256 KiB and its
//   inflate state ~40 KiB at the defaults (windowBits 15, memLevel 8), per
//   connection, for life. A connection of ours costs under 800 B. So by
//   default the server answers every offer with server_no_context_takeover
//   and client_no_context_takeover (RFC 7692 7.1.1: a server may add the
//   latter unasked): every message is compressed on its own, an idle
//   connection holds no zlib state, the streams are borrowed from the loop's
//   pool for one message, and a publication sent to N subscribers is
//   compressed once for all of them. DeflateOptions::context_takeover lets
//   the server keep each connection's deflate stream, with the window and
//   memLevel capped (max_window_bits, mem_level): ~22 KiB per connection at
//   11 / 4 (measured in docs/BENCHMARKS.md). The client is asked to keep
//   none even then: see below.
//
// Negotiation (server: negotiate_deflate), RFC 7692 5 and 7.1
//   The client lists offers in Sec-WebSocket-Extensions, most preferred
//   first; the server accepts the first it can and answers with one element.
//   An offer is declined (the next one is tried; none left: no compression,
//   the handshake still succeeds) when it has a parameter RFC 7692 does not
//   define, one twice, a value where none belongs (the two
//   *_no_context_takeover), no value or one outside 8..15 (written as a
//   decimal without leading zeros, bare or quoted) for server_max_window_bits,
//   a bad value for client_max_window_bits (which may also come bare). A
//   header that does not parse as RFC 6455 9.1's grammar declines every
//   offer in it. The answer, stateless (the default):
//     permessage-deflate; server_no_context_takeover; client_no_context_takeover
//   plus server_max_window_bits=N when the client asked for N (N = 8: zlib
//   cannot deflate with a 256-byte window, it makes it 512, so such a
//   connection gets our messages uncompressed; theirs are still inflated).
//   With context_takeover: server_no_context_takeover only when offered;
//   server_max_window_bits = min(asked, max_window_bits) always (our stream
//   keeps to it; the client's inflate window can be that small too);
//   client_no_context_takeover always. A client's context would cost a
//   32 KiB inflate window per connection on our side: a smaller one cannot
//   be enforced, because zlib resolves a distance past the window from the
//   output of the same call, so a client overstepping its window would be
//   caught or not depending on how its bytes arrive.
//
// Threads: pure functions. Cost: one pass over the header's bytes.
#pragma once

#include <heartwheel/http/message.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::ws {

// The extension's token in Sec-WebSocket-Extensions.
inline constexpr std::string_view kPermessageDeflate = "permessage-deflate";

// One end's compression policy: a server's (HandshakeOptions::deflate,
// NetHandlerOptions) or a client's (what it offers). One DeflateOptions is
// shared by the loops of a server; each loop's DeflatePool copies it.
struct DeflateOptions {
  // Negotiate permessage-deflate when the peer offers it (server) / offer it
  // (client). Off: the extension is never mentioned.
  bool enabled = false;
  // Let the server keep each connection's deflate stream between messages
  // (see the top of this file), with a window of at most max_window_bits and
  // mem_level; clients still keep none. Off (the default): every message is
  // compressed on its own. (A client that offers context asks the server to
  // keep its own and keeps its own: deflate_offer.)
  bool context_takeover = false;
  // zlib compression level, 1 (fastest) to 9 (smallest).
  int level = 6;
  // Messages (and publications) with fewer payload bytes go uncompressed:
  // for small JSON the 2-10 bytes saved do not pay for the CPU.
  std::size_t min_size = 256;
  // With context_takeover: the largest window (9..15, as log2 bytes) of a
  // connection's deflate stream, and its memLevel (1..9). Its memory is
  // about 2^(w+2) + 2^(m+9) bytes plus zlib's ~6 KiB of state (zconf.h):
  // ~22 KiB at 11 / 4.
  int max_window_bits = 11;
  int mem_level = 4;
  // Inflated bytes one Session::feed may produce before the session lets the
  // loop's other connections have a turn (Transport::yield_turn): a stream
  // of small messages that each inflate to the message limit cannot stall
  // the loop. A message in progress is finished first, so the work of one
  // call is at most this plus SessionOptions::max_message_bytes.
  std::size_t inflate_budget = std::size_t{1} << 20;

  // Throws std::invalid_argument naming the field (level outside 1..9,
  // max_window_bits outside 9..15 (zlib cannot deflate with 8), mem_level
  // outside 1..9, inflate_budget 0).
  void validate() const;
};

// What one connection agreed on: the parameters of the accepted offer as
// the server answered it. `enabled` false: no compression on it.
struct DeflateParams {
  bool enabled = false;
  bool server_no_context_takeover = false;
  bool client_no_context_takeover = false;
  // Windows as log2 bytes, 8..15; 0: the parameter was not in the answer
  // (the end may use 15).
  std::uint8_t server_max_window_bits = 0;
  std::uint8_t client_max_window_bits = 0;

  // The Sec-WebSocket-Extensions value that states these parameters, e.g.
  // "permessage-deflate; server_no_context_takeover;
  // client_no_context_takeover". Empty when !enabled.
  std::string response() const;

  friend bool operator==(const DeflateParams&, const DeflateParams&) = default;
};

// Server: the answer to the offers in every Sec-WebSocket-Extensions header
// of `request_headers` (in header order), under `options`. Not enabled when
// options.enabled is false, nothing is offered, or every offer is declined
// (the rules above); the handshake goes on without compression then.
DeflateParams negotiate_deflate(const http::Headers& request_headers,
                                const DeflateOptions& options);

// Client: the Sec-WebSocket-Extensions value that offers permessage-deflate
// under `options`: stateless ("permessage-deflate;
// server_no_context_takeover; client_no_context_takeover") unless
// options.context_takeover, which offers "permessage-deflate;
// client_max_window_bits" (the server may keep its context and cap ours).
// Empty when !options.enabled.
std::string deflate_offer(const DeflateOptions& options);

// Client: checks the server's Sec-WebSocket-Extensions answer (the value,
// "" when the response had none) against what deflate_offer(options)
// offered. Returns the agreed parameters (enabled false when the server
// declined: an empty value), or nullopt with `error` set when the answer
// breaks RFC 7692 (an extension not offered, two elements, an unknown or
// repeated parameter, a bad value, server_no_context_takeover missing when
// offered, client_max_window_bits when not offered): the client must then
// fail the connection (RFC 6455 4.1).
std::optional<DeflateParams> accept_deflate_response(std::string_view value,
                                                     const DeflateOptions& options,
                                                     std::string& error);

}  // namespace heartwheel::ws
