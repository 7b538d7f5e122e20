// ws::Session with permessage-deflate: messages compressed both ways (RSV1
// on the first frame only), fragmented compressed messages with control
// frames between, the frames RFC 7692 forbids, bad DEFLATE, a zip bomb
// stopped at the limit while inflating, the inflate budget's turns, context
// takeover, and a shared frame compressed once for every session of a pool.
#include <heartwheel/common/error.h>
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/session.h>
#include <heartwheel/ws/stats.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ws_harness.h"

using namespace ws_test;

namespace {

DeflateOptions options(bool context = false) {
  DeflateOptions o;
  o.enabled = true;
  o.context_takeover = context;
  return o;
}

// What a server answers a browser's offer with (the default policy).
DeflateParams stateless() {
  DeflateParams p;
  p.enabled = true;
  p.server_no_context_takeover = true;
  p.client_no_context_takeover = true;
  return p;
}

// JSON that compresses the way chat traffic does: field names repeat,
// values vary.
std::string json(std::size_t bytes, int seed = 0) {
  std::string s = "{\"channel\":\"room-" + std::to_string(seed) + "\",\"items\":[";
  for (int i = 0; s.size() < bytes; ++i)
    s += "{\"sku\":\"A" + std::to_string(1000 + (i * 7 + seed) % 97) +
         "\",\"qty\":" + std::to_string(i % 5 + 1) +
         ",\"price\":" + std::to_string(100 + i * 13 % 900) + "},";
  s.back() = ']';
  return s + "}";
}

// One end of a connection: records, owns nothing but may be given a pool.
struct End final : SessionOwner {
  explicit End(DeflatePool* p) : pool(p) {}
  DeflatePool* pool;
  std::string sent;
  std::vector<const std::string*> shared;
  std::vector<std::string> messages;
  std::vector<std::uint16_t> errors;
  bool turns = false;  // yield_turn() says yes
  int yields = 0;
  int closes = 0;

  void send(std::string_view head, std::string_view payload) override {
    sent.append(head).append(payload);
  }
  void send_shared(const SharedFrame& frame) override {
    shared.push_back(frame.get());
    sent.append(*frame);
  }
  void close() override { ++closes; }
  DeflatePool* deflate_pool() noexcept override { return pool; }
  bool yield_turn() override {
    if (turns) ++yields;
    return turns;
  }
  void on_message(Session&, MessageType, std::string& payload) override {
    messages.push_back(payload);
  }
  void on_protocol_error(Session&, std::uint16_t code, std::string_view) override {
    errors.push_back(code);
  }
  std::string take() { return std::exchange(sent, {}); }
};

SessionOptions client_role() {
  SessionOptions o;
  o.role = Role::client;
  return o;
}

// Each end's pool with its counters, and a server and a client session.
struct Pair {
  explicit Pair(const DeflateParams& p = stateless(), const DeflateOptions& o = options())
      : server_pool(o, &server_stats), client_pool(o, &client_stats) {
    server.use_deflate(p);
    client.use_deflate(p);
  }
  Stats server_stats, client_stats;
  DeflatePool server_pool, client_pool;
  End server_end{&server_pool}, client_end{&client_pool};
  SessionOptions server_options, client_options = client_role();
  Session server{server_end, server_options};
  Session client{client_end, client_options};
};

std::string compressed(std::string_view payload) {
  DeflatePool pool(options());
  std::string out;
  pool.compress(payload, out);
  return out;
}

constexpr std::uint8_t kRsv1 = 0x4;  // as client_frame's `rsv` takes it

}  // namespace

TEST_CASE("deflate session: messages go compressed both ways, RSV1 on their frame",
          "[ws][deflate][session]") {
  Pair p;
  const std::string message = json(2000);
  REQUIRE(p.client.send_text(message) == std::error_code());
  std::string wire = p.client_end.take();
  CHECK(static_cast<std::uint8_t>(wire[0]) == 0xC1);  // FIN | RSV1 | text
  CHECK(wire.size() < message.size() / 3);
  p.server.feed(wire);
  REQUIRE(p.server_end.messages == std::vector<std::string>{message});
  REQUIRE(p.server.send_text(message) == std::error_code());
  wire = p.server_end.take();
  CHECK(static_cast<std::uint8_t>(wire[0]) == 0xC1);
  p.client.feed(wire);
  REQUIRE(p.client_end.messages == std::vector<std::string>{message});
  CHECK(p.server_stats.compressed_messages_received == 1);
  CHECK(p.server_stats.compressed_received_uncompressed_bytes == message.size());
  CHECK(p.server_stats.compressed_messages_sent == 1);
  CHECK(p.server_stats.compressed_sent_uncompressed_bytes == message.size());
  CHECK(p.server_stats.compressed_sent_compressed_bytes == wire.size() - 4);  // 4: the header
  // The stream went back to the pool: nothing is lent between messages.
  CHECK(p.server_pool.lent_inflaters() == 0);
  CHECK(p.server_pool.idle_inflaters() == 1);
  // Under min_size: plain, counted.
  REQUIRE(p.server.send_text("{\"ok\":true}") == std::error_code());
  CHECK(p.server_end.take() == server_frame(Opcode::text, "{\"ok\":true}"));
  CHECK(p.server_stats.compression_skipped_small == 1);
}

TEST_CASE(
    "deflate session: a fragmented compressed message with control frames between its "
    "fragments is inflated whole, whatever the split",
    "[ws][deflate][session]") {
  const std::string message = json(5000, 1);
  const std::string c = compressed(message);
  const std::size_t third = c.size() / 3;
  const std::vector<std::string> steps = {
      client_frame(kText, c.substr(0, third), false, kRsv1),
      client_frame(kPing, "between"),
      client_frame(kCont, c.substr(third, third), false),
      client_frame(kPong, ""),
      client_frame(kCont, c.substr(2 * third), true),
      // Then a plain message and a compressed one-frame message.
      client_frame(kText, "plain"),
      client_frame(kBinary, compressed("tiny, still compressed by its sender"), true, kRsv1),
  };
  const Run r = run_case(steps, {}, stateless());
  REQUIRE(r.all.events.size() == 6);
  CHECK(r.all.events[0] == "ping:between");
  CHECK(r.all.events[1] == "pong:");
  CHECK(r.all.events[2] == "text:" + shown(message));
  CHECK(r.all.events[3] == "text:plain");
  CHECK(r.all.events[4] == "binary:tiny, still compressed by its sender");
  CHECK(r.all.events[5] == "close:1000:");
  CHECK(r.all.closes == 1);
}

TEST_CASE("deflate session: RSV1 where RFC 7692 does not allow it fails with 1002",
          "[ws][deflate][session]") {
  const std::string c = compressed(json(600));
  SECTION("on a continuation frame") {
    require_failed(run_case({client_frame(kText, c.substr(0, 10), false, kRsv1),
                             client_frame(kCont, c.substr(10), true, kRsv1)},
                            {}, stateless()),
                   1002);
  }
  SECTION("on a control frame") {
    require_failed(run_case({client_frame(kPing, "x", true, kRsv1)}, {}, stateless()), 1002);
  }
  SECTION("without the extension agreed") {
    require_failed(run_case({client_frame(kText, c, true, kRsv1)}), 1002);
  }
  SECTION("RSV2 or RSV3 even with it") {
    require_failed(run_case({client_frame(kText, c, true, 0x2)}, {}, stateless()), 1002);
  }
}

TEST_CASE("deflate session: compressed bytes that are not DEFLATE, or not UTF-8, fail with 1007",
          "[ws][deflate][session]") {
  // BFINAL 1, BTYPE 11: a reserved block type.
  require_failed(
      run_case({client_frame(kBinary, bytes({0xff, 0xff, 0x00}), true, kRsv1)}, {}, stateless()),
      1007);
  require_failed(
      run_case({client_frame(kText, compressed("caf\xc3"), true, kRsv1)}, {}, stateless()), 1007);
  require_failed(
      run_case({client_frame(kText, compressed("bad \xff byte"), true, kRsv1)}, {}, stateless()),
      1007);
  // Not UTF-8 at its first byte and past the limit too: judged in the order
  // the bytes come, so 1007 however the input is split (one inflate call
  // used to report the limit first when it made all the output at once).
  SessionOptions small;
  small.max_message_bytes = 64;
  require_failed(
      run_case({client_frame(kText, compressed("\xff" + std::string(1000, 'a')), true, kRsv1)},
               small, stateless()),
      1007);
}

TEST_CASE(
    "deflate session: a zip bomb fails with 1009 as soon as it inflates past the limit, "
    "holding no more than the limit",
    "[ws][deflate][session][bomb]") {
  const std::string bomb = compressed(std::string(10 << 20, '\0'));  // 10 MiB of zeros
  INFO("compressed: " << bomb.size() << " bytes");
  CHECK(bomb.size() < 12 * 1024);  // DEFLATE's best is ~1:1000
  require_failed(run_case({client_frame(kBinary, bomb, true, kRsv1)}, {}, stateless()), 1009);
  // Fed in pieces: it fails while inflating, long before its last byte, and
  // the message never held more than the limit.
  DeflatePool pool(options());
  End end(&pool);
  SessionOptions o;
  o.max_message_bytes = 1 << 20;
  Session s(end, o);
  s.use_deflate(stateless());
  const std::string wire = client_frame(kBinary, bomb, true, kRsv1);
  std::size_t fed = 0;
  std::size_t most = 0;
  for (; fed < wire.size() && s.state() == Session::State::open; fed += 256) {
    s.feed(std::string_view(wire).substr(fed, 256));
    most = std::max(most, s.buffered());
  }
  CHECK(end.errors == std::vector<std::uint16_t>{1009});
  CHECK(fed < wire.size() / 5);
  CHECK(most <= o.max_message_bytes);
  CHECK(s.buffered() == 0);
  CHECK(pool.lent_inflaters() == 0);  // given back when the session failed
}

TEST_CASE(
    "deflate session: past the inflate budget it waits for a turn at a frame boundary, then "
    "goes on in order",
    "[ws][deflate][session][turns]") {
  DeflateOptions o = options();
  o.inflate_budget = 64 * 1024;
  Stats stats;
  DeflatePool pool(o, &stats);
  End end(&pool);
  end.turns = true;
  const SessionOptions so;
  Session s(end, so);
  s.use_deflate(stateless());
  std::string wire;
  std::vector<std::string> sent;
  for (int i = 0; i < 6; ++i) {
    sent.push_back(json(40 * 1024, i));
    wire += client_frame(kText, compressed(sent.back()), true, kRsv1);
  }
  s.feed(wire);
  CHECK(end.messages.size() == 2);  // 80 KiB inflated >= 64 KiB: the next frame waits
  CHECK(s.waiting_turn());
  CHECK(end.yields == 1);
  CHECK(stats.inflate_yields == 1);
  // Bytes fed meanwhile wait behind the others.
  sent.push_back("after");
  s.feed(client_frame(kText, "after"));
  CHECK(end.messages.size() == 2);
  s.resume();
  CHECK(end.messages.size() == 4);
  s.resume();
  CHECK(end.messages.size() == 6);
  s.resume();
  CHECK_FALSE(s.waiting_turn());
  CHECK(end.messages == sent);
  s.resume();  // nothing waits: nothing happens
  CHECK(end.messages.size() == 7);
  // Without turns (a transport that has none) it goes on at once.
  end.turns = false;
  s.feed(wire);
  CHECK(end.messages.size() == 13);
}

TEST_CASE("deflate session: with context takeover a repeated message costs a fraction",
          "[ws][deflate][session][context]") {
  DeflateParams p;
  p.enabled = true;
  p.server_max_window_bits = 11;
  p.client_max_window_bits = 11;
  Pair pair(p, options(true));
  const std::string message = json(1500, 3);
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(pair.server.send_text(message) == std::error_code());
    const std::string wire = pair.server_end.take();
    sizes.push_back(wire.size());
    pair.client.feed(wire);
    REQUIRE(pair.client.send_text(message) == std::error_code());
    pair.server.feed(pair.client_end.take());
  }
  CHECK(pair.client_end.messages == std::vector<std::string>(3, message));
  CHECK(pair.server_end.messages == std::vector<std::string>(3, message));
  INFO("frame sizes " << sizes[0] << ", " << sizes[1] << ", " << sizes[2]);
  CHECK(sizes[1] * 4 < sizes[0]);  // the second refers back to the first
  CHECK(pair.server_pool.lent_inflaters() == 0);
  CHECK(pair.server_pool.idle_inflaters() == 0);  // the session's own streams, not the pool's
  // A shared frame is compressed on the session's own stream too.
  pair.server.send_shared(encode_shared(Opcode::text, message));
  CHECK(pair.server_end.shared.empty());  // its own frame: not the shared one
  pair.client.feed(pair.server_end.take());
  CHECK(pair.client_end.messages.back() == message);
}

TEST_CASE(
    "deflate session: a peer's context is inflated with a full window, so a distance past the "
    "window it agreed on gives the same outcome whatever the split",
    "[ws][deflate][session][context]") {
  // The client said it keeps a 512-byte window but refers 1,000 bytes back.
  // zlib resolves such a distance from the output of the same call: a 9-bit
  // inflate stream accepted it fed whole and failed fed byte by byte.
  DeflateParams p;
  p.enabled = true;
  p.server_no_context_takeover = true;
  p.client_max_window_bits = 9;
  std::string text;
  for (int i = 0; text.size() < 1000; ++i) text += std::to_string(i * 7919 % 1000) + ",";
  const std::string message = text + text;
  const Run r = run_case({client_frame(kText, compressed(message), true, kRsv1)}, {}, p);
  REQUIRE(r.all.events.size() == 2);
  CHECK(r.all.events[0] == "text:" + shown(message));
}

TEST_CASE(
    "deflate session: a shared frame is compressed once for every stateless session of a "
    "pool and sent to each by reference",
    "[ws][deflate][session][shared]") {
  Stats stats;
  DeflatePool pool(options(), &stats);
  std::vector<std::unique_ptr<End>> ends;
  std::vector<std::unique_ptr<Session>> sessions;
  const SessionOptions o;
  for (int i = 0; i < 6; ++i) {
    ends.push_back(std::make_unique<End>(&pool));
    sessions.push_back(std::make_unique<Session>(*ends.back(), o));
    if (i < 5) sessions.back()->use_deflate(stateless());  // the sixth did not agree
  }
  const std::string message = json(1024);
  const SharedFrame frame = encode_shared(Opcode::text, message);
  for (auto& s : sessions) REQUIRE(s->send_shared(frame) == std::error_code());
  CHECK(stats.deflate_calls == 1);
  CHECK(stats.compressed_messages_sent == 5);
  const std::string* compressed_frame = ends[0]->shared[0];
  CHECK(compressed_frame != frame.get());
  for (int i = 0; i < 5; ++i) CHECK(ends[i]->shared == std::vector{compressed_frame});
  CHECK(ends[5]->shared == std::vector{frame.get()});
  CHECK(static_cast<std::uint8_t>((*compressed_frame)[0]) == 0xC1);
  // A client reads it back.
  DeflatePool client_pool(options());
  End client_end(&client_pool);
  const SessionOptions co = client_role();
  Session client(client_end, co);
  client.use_deflate(stateless());
  client.feed(*compressed_frame);
  CHECK(client_end.messages == std::vector<std::string>{message});
  // A second publication: one more deflate; a small one: none, sent as is.
  const SharedFrame second = encode_shared(Opcode::text, json(800, 1));
  const SharedFrame small = encode_shared(Opcode::text, "{\"k\":1}");
  for (auto& s : sessions) {
    (void)s->send_shared(second);
    (void)s->send_shared(small);
  }
  CHECK(stats.deflate_calls == 2);
  CHECK(stats.compression_skipped_small == 1);
  CHECK(ends[0]->shared.back() == small.get());
  CHECK(pool.shared(second, 15) == pool.shared(second, 15));
  CHECK(stats.deflate_calls == 2);
}

TEST_CASE("deflate session: a peer that asked for an 8-bit window gets plain messages",
          "[ws][deflate][session]") {
  DeflateParams p = stateless();
  p.server_max_window_bits = 8;  // zlib cannot keep to it
  Pair pair(p);
  const std::string message = json(2000);
  REQUIRE(pair.server.send_text(message) == std::error_code());
  CHECK(pair.server_end.take() == server_frame(Opcode::text, message));
  const SharedFrame frame = encode_shared(Opcode::text, message);
  REQUIRE(pair.server.send_shared(frame) == std::error_code());
  CHECK(pair.server_end.shared == std::vector{frame.get()});
  // Its own compressed messages are still read.
  REQUIRE(pair.client.send_text(message) == std::error_code());
  pair.server.feed(pair.client_end.take());
  CHECK(pair.server_end.messages == std::vector<std::string>{message});
}

TEST_CASE("deflate pool: compress and decompress are inverses, and decompress keeps its limit",
          "[ws][deflate][pool]") {
  DeflatePool pool(options());
  const std::string message = json(3000, 7);
  std::string c;
  pool.compress(message, c);
  std::string back;
  CHECK(pool.decompress(c, back, message.size()) == std::error_code());
  CHECK(back == message);
  back.clear();
  CHECK(pool.decompress(c, back, message.size() - 1) == heartwheel::errc::frame_too_large);
  CHECK(back.size() <= message.size() - 1);
  back.clear();
  CHECK(pool.decompress(bytes({0xff, 0x00}), back, 100) == heartwheel::errc::protocol_error);
  CHECK(pool.lent_inflaters() == 0);
  // A session cannot compress without a pool to borrow from.
  End none(nullptr);
  const SessionOptions o;
  Session s(none, o);
  CHECK_THROWS_AS(s.use_deflate(stateless()), std::invalid_argument);
  CHECK_FALSE(s.deflating());
}
