// Drives ws::Session in tests: an echo handler (what Autobahn|Testsuite's
// fuzzing client expects of a server), a recording transport, and a runner
// that feeds every script whole, byte by byte and in seeded random splits and
// requires the same outcome from each. Frames are built here by hand, not with
// the library's encoder, so the tests do not check the library with itself.
#pragma once

#include <heartwheel/ws/deflate.h>
#include <heartwheel/ws/session.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace ws_test {

using namespace heartwheel::ws;

inline constexpr Opcode kText = Opcode::text;
inline constexpr Opcode kBinary = Opcode::binary;
inline constexpr Opcode kCont = Opcode::continuation;
inline constexpr Opcode kPing = Opcode::ping;
inline constexpr Opcode kPong = Opcode::pong;

// Bytes from a list of values 0..255.
std::string bytes(std::initializer_list<int> values);
std::string repeat(std::string_view piece, std::size_t times);
// `wire` cut into steps of `size` bytes (the last may be shorter); 0: one step.
std::vector<std::string> chops(const std::string& wire, std::size_t size);

// The test's masking key (RFC 6455 5.7's example key).
inline constexpr MaskKey kTestMask = {0x37, 0xfa, 0x21, 0x3d};

// One frame built by hand. byte0 is FIN|RSV|opcode as sent; `length_form`
// forces the 7-bit (0), 16-bit (126) or 64-bit (127) length encoding, -1
// picks the shortest.
struct RawFrame {
  std::uint8_t byte0;
  std::string payload;
  bool masked = true;
  int length_form = -1;
  MaskKey mask = kTestMask;
};
std::string encode_raw(const RawFrame& f);

// A client frame (masked), as a browser would send it.
std::string client_frame(Opcode op, std::string_view payload, bool fin = true,
                         std::uint8_t rsv = 0);
// A client close frame with a code (and reason); and one with no payload.
std::string client_close(std::uint16_t code, std::string_view reason = {});
std::string client_empty_close();
// What a server sends (unmasked).
std::string server_frame(Opcode op, std::string_view payload, bool fin = true);
std::string server_close(std::uint16_t code);
std::string server_empty_close();

// What the session did in one stretch of input.
struct Outcome {
  // "text:<payload>", "binary:<payload>", "ping:<payload>", "pong:<payload>",
  // "close:<code>:<reason>", "error:<code>"; payloads above 64 bytes appear as
  // "<N bytes fnv1a=...>" so failures stay readable.
  std::vector<std::string> events;
  std::string sent;  // every byte handed to the transport
  int closes = 0;    // Transport::close() calls

  void append(const Outcome& later);
  bool operator==(const Outcome&) const = default;
};
// Events, the size, hash and first bytes (hex) of what was sent, closes.
std::ostream& operator<<(std::ostream& os, const Outcome& o);

struct Run {
  std::vector<Outcome> steps;  // after each step of the script
  Outcome all;                 // the whole run
  Session::State state = Session::State::open;
};

// Runs `steps` through a fresh echo session: each step is fed whole, byte by
// byte, and in random splits from several seeds; then all steps are joined and
// fed in random splits. Every way must give the same outcomes (REQUIREd here,
// naming the way that differed). Returns the outcome of the whole-step way.
// With `deflate` enabled the session compresses as agreed, with a DeflatePool
// of `deflate_options` (enabled forced on).
Run run(const std::vector<std::string>& steps, const SessionOptions& options = {},
        const DeflateParams& deflate = {}, DeflateOptions deflate_options = {});

// Autobahn style: runs `steps`, then the client's normal close (1000). A case
// that passes ends with the server echoing that close and closing.
Run run_case(std::vector<std::string> steps, const SessionOptions& options = {},
             const DeflateParams& deflate = {});

// Checks the outcome of a case that passes: `events`, then the client's close
// (1000) echoed; `sent` followed by that echo; one Transport::close().
void require_clean(const Run& r, std::vector<std::string> events = {},
                   const std::string& sent = {});
// Checks a case where the server fails the connection with `code` after
// `events` and `sent`: close(code) sent, one Transport::close(), and nothing
// more (the client's closing 1000 is ignored).
void require_failed(const Run& r, std::uint16_t code, std::vector<std::string> events = {},
                    const std::string& sent = {});

// The text of an event for `payload` as Outcome::events writes it.
std::string shown(std::string_view payload);

// Feeds `wire` one byte at a time and returns the index of the byte at which
// the session failed (sent its close), or wire.size() if it never did.
std::size_t failing_byte(const std::string& wire, const SessionOptions& options = {});

}  // namespace ws_test
