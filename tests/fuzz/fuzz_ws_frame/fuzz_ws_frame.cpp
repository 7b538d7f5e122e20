// Fuzz target: the WebSocket frame parser and the session's feed path.
// Input: plan byte + options byte + stream (common/fuzz_input.h).
//
// Options byte:
//   bit 0     role: 0 server (frames must be masked), 1 client
//   bits 1-3  allowed_rsv (RSV bits an extension would define); for the
//             session, RSV1 (bit 3) turns permessage-deflate on, stateless,
//             or with context takeover both ways when RSV3 (bit 1) is set too
//   bits 4-6  the session's max_message_bytes: 16 << (bits 4-6) (16..2048)
//   bit 7     the session's handler echoes each message back (re-entrant send)
//
// 1. ws::FrameParser is fed the stream in the planned reads and, again, in
//    one piece: the headers, payload bytes, error and the byte offset of the
//    error must be the same. On the one-piece run, every payload must be the
//    stream's bytes unmasked with the header's key, a control frame must be
//    final and carry at most 125 bytes, and a failed parser stays failed.
// 2. ws::Session is fed the same two ways over a recording transport and
//    handler: the events (messages, pings, pongs, close, protocol error), the
//    bytes it sent and its final state must be the same; Transport::close is
//    called at most once, and exactly once when the session ends `closed`.
//    With compression, the inflate budget is 64 bytes and the transport
//    grants every turn it is asked for, resumed after each read until
//    nothing waits (the log must still match the one-piece run); what the
//    echo sends compressed must inflate back to the message; every stream
//    lent is given back by the time the session is gone.
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/frame_parser.h>
#include <heartwheel/ws/session.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/fuzz_input.h"

using namespace heartwheel::ws;

namespace {

struct ParseLog {
  std::string events;  // one record per header, then its payload
  const char* error = nullptr;
  std::size_t error_at = 0;  // bytes consumed when the error was seen
};

void record_header(std::string& log, const FrameHeader& h) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "H%d%d%x%d%llu:", h.fin, h.rsv,
                              static_cast<unsigned>(h.opcode), h.masked,
                              static_cast<unsigned long long>(h.payload_length));
  log.append(buf, static_cast<std::size_t>(n));
  if (h.masked) log.append(reinterpret_cast<const char*>(h.mask.data()), 4);
}

// Parses `stream` in the pieces `reads` gives (or whole when reads is null).
ParseLog parse(FrameParser& p, std::string_view stream, fuzz::Reads* reads,
               std::vector<std::pair<std::size_t, FrameHeader>>* payload_starts) {
  ParseLog log;
  std::size_t fed = 0;  // bytes of the stream handed over before `in`
  bool frame_open = false;
  std::string_view piece = stream;
  for (bool more = reads ? reads->next(piece) : true; more;
       more = reads ? reads->next(piece) : false) {
    std::string_view in = piece;
    while (!in.empty() || frame_open) {
      if (!frame_open) {
        const auto s = p.read_header(in);
        if (s == FrameParser::Status::need_more) break;
        if (s == FrameParser::Status::error) {
          log.error = p.error();
          log.error_at = fed + (piece.size() - in.size());
          FUZZ_CHECK(p.failed());
          FUZZ_CHECK(p.read_header(in) == FrameParser::Status::error);  // sticky
          return log;
        }
        const FrameHeader& h = p.header();
        if (is_control(h.opcode)) FUZZ_CHECK(h.fin && h.payload_length <= kMaxControlPayload);
        FUZZ_CHECK(h.payload_length >> 63 == 0);
        record_header(log.events, h);
        if (payload_starts) payload_starts->emplace_back(fed + (piece.size() - in.size()), h);
        frame_open = true;
      }
      const std::size_t before = log.events.size();
      p.read_payload(in, log.events);
      FUZZ_CHECK(log.events.size() - before <= piece.size());
      if (p.remaining() > 0) break;
      frame_open = false;
    }
    fed += piece.size();
  }
  return log;
}

void check_parser(std::uint8_t plan, Role role, std::uint8_t rsv, std::string_view stream) {
  FrameParser split_parser(role, rsv);
  fuzz::Reads reads(plan, stream);
  const ParseLog split = parse(split_parser, stream, &reads, nullptr);

  FrameParser whole_parser(role, rsv);
  std::vector<std::pair<std::size_t, FrameHeader>> starts;
  const ParseLog whole = parse(whole_parser, stream, nullptr, &starts);

  FUZZ_CHECK(split.events == whole.events);
  FUZZ_CHECK((split.error == nullptr) == (whole.error == nullptr));
  if (whole.error) {
    FUZZ_CHECK(std::strcmp(split.error, whole.error) == 0);
    FUZZ_CHECK(split.error_at == whole.error_at);
  }
  // Unmasking: each payload is the stream's bytes XOR the key.
  std::size_t pos = 0;
  for (const auto& [at, h] : starts) {
    const std::size_t rec = whole.events.find(':', pos) + 1 + (h.masked ? 4 : 0);
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(h.payload_length, stream.size() - at));
    std::string raw(stream.substr(at, n));
    if (h.masked) apply_mask(raw.data(), raw.size(), h.mask);
    FUZZ_CHECK(whole.events.compare(rec, n, raw) == 0);
    pos = rec + n;
  }
}

// ---- the session -------------------------------------------------------------

struct Recorder final : SessionOwner {
  std::string log;  // events and bytes sent, in order
  std::string last_head, last_payload;
  int closes = 0;
  bool echo = false;
  bool context = false;
  DeflatePool* pool = nullptr;
  DeflatePool* checker = nullptr;  // inflates what the echo compressed

  void send(std::string_view head, std::string_view payload) override {
    log += "S";
    log += head;
    log += payload;
    last_head.assign(head);
    last_payload.assign(payload);
  }
  DeflatePool* deflate_pool() noexcept override { return pool; }
  // Every turn asked for is granted (and not logged: where a turn comes
  // depends on how the bytes were split, what happens must not).
  bool yield_turn() override { return pool != nullptr; }
  void close() override {
    ++closes;
    log += "X";
  }
  void on_message(Session& s, MessageType type, std::string& payload) override {
    log += type == MessageType::text ? "T" : "B";
    log += std::to_string(payload.size()) + ":" + payload;
    if (type == MessageType::text) FUZZ_CHECK(is_valid_utf8(payload));
    FUZZ_CHECK(payload.size() <= s.options().max_message_bytes);
    if (!echo) return;
    last_head.clear();
    (void)s.send(type, payload);  // re-entrant, as an echo server does
    const auto b0 = last_head.empty() ? 0 : static_cast<std::uint8_t>(last_head[0]);
    if ((b0 & kCompressedBit) == 0) return;
    FUZZ_CHECK(s.deflating());
    if (context) return;  // its stream refers to earlier messages
    std::string compressed = last_payload;
    if (s.role() == Role::client) {  // masked: the key ends the header
      MaskKey key;
      std::memcpy(key.data(), last_head.data() + last_head.size() - 4, 4);
      apply_mask(compressed.data(), compressed.size(), key);
    }
    std::string back;
    FUZZ_CHECK(!checker->decompress(compressed, back, payload.size()));
    FUZZ_CHECK(back == payload);
  }
  void on_ping(Session&, std::string_view payload) override {
    log += "P";
    log += payload;
  }
  void on_pong(Session&, std::string_view payload) override {
    log += "O";
    log += payload;
  }
  void on_close(Session&, std::uint16_t code, std::string_view reason) override {
    log += "C" + std::to_string(code) + ":";
    log += reason;
    FUZZ_CHECK(is_valid_utf8(reason));
  }
  void on_protocol_error(Session&, std::uint16_t code, std::string_view) override {
    log += "E" + std::to_string(code);
    FUZZ_CHECK(code == kCloseProtocolError || code == kCloseInvalidPayload ||
               code == kCloseMessageTooBig);
  }
};

struct SessionRun {
  std::string log;
  Session::State state;
  bool failed;
  std::uint16_t sent_code, received_code;
};

// Compression as the options byte asks (no pool: off).
struct Deflate {
  bool on = false;
  bool context = false;
};

DeflateParams agreed(const Deflate& d) {
  DeflateParams p;
  p.enabled = d.on;
  p.server_no_context_takeover = p.client_no_context_takeover = !d.context;
  if (d.context) p.server_max_window_bits = p.client_max_window_bits = 9;
  return p;
}

SessionRun run_session(const SessionOptions& o, bool echo, const Deflate& deflate,
                       std::string_view stream, fuzz::Reads* reads) {
  DeflateOptions d;
  d.enabled = true;
  d.min_size = 8;
  d.inflate_budget = 64;  // turns at almost every frame boundary
  d.mem_level = 1;
  DeflatePool pool(d), checker(d);
  Recorder r;
  r.echo = echo;
  r.context = deflate.context;
  r.checker = &checker;
  SessionRun out;
  {
    r.pool = deflate.on ? &pool : nullptr;
    Session s(r, o);
    s.use_deflate(agreed(deflate));
    std::string_view piece = stream;
    for (bool more = reads ? reads->next(piece) : true; more;
         more = reads ? reads->next(piece) : false) {
      s.feed(piece);
      FUZZ_CHECK(s.buffered() <= o.max_message_bytes);
      while (s.waiting_turn()) {  // each turn the transport granted
        s.resume();
        FUZZ_CHECK(s.buffered() <= o.max_message_bytes);
      }
    }
    FUZZ_CHECK(r.closes <= 1);
    FUZZ_CHECK((r.closes == 1) == (s.state() == Session::State::closed));
    if (s.state() == Session::State::closed) FUZZ_CHECK(pool.lent_inflaters() == 0);
    out = {r.log, s.state(), s.failed(), s.sent_close_code(), s.received_close_code()};
  }
  FUZZ_CHECK(pool.lent_inflaters() == 0);  // the session gave back what it held
  return out;
}

void check_session(std::uint8_t plan, std::uint8_t options, std::string_view stream) {
  SessionOptions o;
  o.role = options & 1 ? Role::client : Role::server;
  o.max_message_bytes = std::size_t{16} << ((options >> 4) & 7);
  // Client frames are masked: the same keys for both runs, so the bytes
  // sent can be compared.
  std::uint32_t counter = 0;
  o.mask_key_source = [&counter] {
    ++counter;
    return MaskKey{static_cast<std::uint8_t>(counter), 0x5A,
                   static_cast<std::uint8_t>(counter >> 8), 0xA5};
  };
  const bool echo = (options & 0x80) != 0;
  const Deflate deflate{(options & 0x08) != 0, (options & 0x02) != 0};
  fuzz::Reads reads(plan, stream);
  const SessionRun split = run_session(o, echo, deflate, stream, &reads);
  counter = 0;
  const SessionRun whole = run_session(o, echo, deflate, stream, nullptr);
  FUZZ_CHECK(split.log == whole.log);
  FUZZ_CHECK(split.state == whole.state);
  FUZZ_CHECK(split.failed == whole.failed);
  FUZZ_CHECK(split.sent_code == whole.sent_code);
  FUZZ_CHECK(split.received_code == whole.received_code);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t plan = data[0], options = data[1];
  const std::string_view stream = fuzz::as_view(data + 2, size - 2);
  const Role role = options & 1 ? Role::client : Role::server;
  check_parser(plan, role, static_cast<std::uint8_t>((options >> 1) & 7), stream);
  check_session(plan, options, stream);
  return 0;
}
