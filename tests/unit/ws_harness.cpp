#include "ws_harness.h"

#include <heartwheel/ws/deflate_pool.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <ostream>
#include <random>

namespace ws_test {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

std::string repeat(std::string_view piece, std::size_t times) {
  std::string s;
  s.reserve(piece.size() * times);
  for (std::size_t i = 0; i < times; ++i) s.append(piece);
  return s;
}

std::vector<std::string> chops(const std::string& wire, std::size_t size) {
  if (size == 0) return {wire};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < wire.size(); i += size) out.push_back(wire.substr(i, size));
  return out;
}

std::string encode_raw(const RawFrame& f) {
  std::string out(1, static_cast<char>(f.byte0));
  const std::uint64_t n = f.payload.size();
  int form = f.length_form;
  if (form < 0) form = n < 126 ? 0 : n <= 0xFFFF ? 126 : 127;
  const int mask_bit = f.masked ? 0x80 : 0;
  if (form == 0) {
    out.push_back(static_cast<char>(mask_bit | static_cast<int>(n)));
  } else if (form == 126) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  }
  if (!f.masked) return out + f.payload;
  for (std::uint8_t b : f.mask) out.push_back(static_cast<char>(b));
  for (std::size_t i = 0; i < f.payload.size(); ++i)
    out.push_back(static_cast<char>(f.payload[i] ^ static_cast<char>(f.mask[i % 4])));
  return out;
}

std::string client_frame(Opcode op, std::string_view payload, bool fin, std::uint8_t rsv) {
  const auto byte0 =
      static_cast<std::uint8_t>((fin ? 0x80 : 0) | (rsv << 4) | static_cast<std::uint8_t>(op));
  return encode_raw({byte0, std::string(payload)});
}

namespace {
std::string code_bytes(std::uint16_t code) { return bytes({code >> 8, code & 0xFF}); }
}  // namespace

std::string client_close(std::uint16_t code, std::string_view reason) {
  return client_frame(Opcode::close, code_bytes(code) + std::string(reason));
}

std::string client_empty_close() { return client_frame(Opcode::close, ""); }

std::string server_frame(Opcode op, std::string_view payload, bool fin) {
  const auto byte0 = static_cast<std::uint8_t>((fin ? 0x80 : 0) | static_cast<std::uint8_t>(op));
  return encode_raw({byte0, std::string(payload), false});
}

std::string server_close(std::uint16_t code) {
  return server_frame(Opcode::close, code_bytes(code));
}

std::string server_empty_close() { return server_frame(Opcode::close, ""); }

namespace {
std::string summary(std::string_view payload) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : payload) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  char buf[64];
  std::snprintf(buf, sizeof buf, "<%zu bytes fnv1a=%016llx>", payload.size(),
                static_cast<unsigned long long>(h));
  return buf;
}
}  // namespace

std::string shown(std::string_view payload) {
  return payload.size() <= 64 ? std::string(payload) : summary(payload);
}

void Outcome::append(const Outcome& later) {
  events.insert(events.end(), later.events.begin(), later.events.end());
  sent += later.sent;
  closes += later.closes;
}

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << "{events:";
  for (const auto& e : o.events) os << " [" << e << "]";
  os << " sent" << summary(o.sent) << ":";
  for (std::size_t i = 0; i < o.sent.size() && i < 48; ++i) {
    char buf[4];
    std::snprintf(buf, sizeof buf, " %02x", static_cast<unsigned char>(o.sent[i]));
    os << buf;
  }
  if (o.sent.size() > 48) os << " ...";
  return os << " closes:" << o.closes << "}";
}

namespace {

// Transport and handler in one: records everything and echoes messages.
struct Recorder final : SessionOwner {
  Outcome current;
  std::unique_ptr<DeflatePool> pool;  // made when the run compresses

  DeflatePool* deflate_pool() noexcept override { return pool.get(); }

  void send(std::string_view head, std::string_view payload) override {
    current.sent.append(head).append(payload);
  }
  void close() override { ++current.closes; }

  void on_message(Session& s, MessageType type, std::string& payload) override {
    current.events.push_back((type == MessageType::text ? "text:" : "binary:") + shown(payload));
    (void)s.send(type, payload);  // echo; refused (errc::closed) once we sent close
  }
  void on_ping(Session&, std::string_view p) override {
    current.events.push_back("ping:" + shown(p));
  }
  void on_pong(Session&, std::string_view p) override {
    current.events.push_back("pong:" + shown(p));
  }
  void on_close(Session&, std::uint16_t code, std::string_view reason) override {
    current.events.push_back("close:" + std::to_string(code) + ":" + std::string(reason));
  }
  void on_protocol_error(Session&, std::uint16_t code, std::string_view) override {
    current.events.push_back("error:" + std::to_string(code));
  }
};

using Splitter = std::function<std::vector<std::string_view>(const std::string&, std::size_t)>;

struct Deflate {
  const DeflateParams& params;
  const DeflateOptions& options;
};

Run drive(const std::vector<std::string>& steps, const SessionOptions& options, Splitter split,
          const Deflate& deflate) {
  Recorder rec;
  if (deflate.params.enabled) rec.pool = std::make_unique<DeflatePool>(deflate.options);
  Session session(rec, options);
  session.use_deflate(deflate.params);
  Run r;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    rec.current = {};
    for (std::string_view piece : split(steps[i], i)) session.feed(piece);
    r.steps.push_back(rec.current);
    r.all.append(rec.current);
  }
  r.state = session.state();
  return r;
}

std::vector<std::string_view> whole(const std::string& s, std::size_t) { return {s}; }

std::vector<std::string_view> byte_by_byte(const std::string& s, std::size_t) {
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < s.size(); ++i) out.emplace_back(s.data() + i, 1);
  return out;
}

// Pieces of 1..64 bytes mostly, sometimes up to the whole rest.
std::vector<std::string_view> random_split(const std::string& s, std::mt19937& rng) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t rest = s.size() - pos;
    std::size_t n =
        (rng() % 4 == 0) ? 1 + rng() % rest : 1 + rng() % std::min<std::size_t>(rest, 64);
    out.emplace_back(s.data() + pos, n);
    pos += n;
  }
  return out;
}

}  // namespace

Run run(const std::vector<std::string>& steps, const SessionOptions& options,
        const DeflateParams& deflate_params, DeflateOptions deflate_options) {
  deflate_options.enabled = true;
  const Deflate deflate{deflate_params, deflate_options};
  const Run reference = drive(steps, options, whole, deflate);
  {
    INFO("each step fed byte by byte");
    const Run r = drive(steps, options, byte_by_byte, deflate);
    REQUIRE(r.steps == reference.steps);
    REQUIRE(r.state == reference.state);
  }
  for (unsigned seed : {1u, 2u, 3u}) {
    INFO("each step fed in random splits, seed " << seed);
    const Run r = drive(
        steps, options,
        [seed](const std::string& s, std::size_t i) {
          std::mt19937 rng(seed * 7919u + static_cast<unsigned>(i));
          return random_split(s, rng);
        },
        deflate);
    REQUIRE(r.steps == reference.steps);
    REQUIRE(r.state == reference.state);
  }
  std::string joined;
  for (const auto& s : steps) joined += s;
  for (unsigned seed : {4u, 5u}) {
    INFO("all steps joined, fed in random splits, seed " << seed);
    const Run r = drive(
        {joined}, options,
        [seed](const std::string& s, std::size_t) {
          std::mt19937 rng(seed);
          return random_split(s, rng);
        },
        deflate);
    REQUIRE(r.all == reference.all);
    REQUIRE(r.state == reference.state);
  }
  return reference;
}

Run run_case(std::vector<std::string> steps, const SessionOptions& options,
             const DeflateParams& deflate) {
  steps.push_back(client_close(1000));
  return run(steps, options, deflate);
}

void require_clean(const Run& r, std::vector<std::string> events, const std::string& sent) {
  events.push_back("close:1000:");
  Outcome expected{events, sent + server_close(1000), 1};
  CHECK(r.all == expected);
  CHECK(r.state == Session::State::closed);
}

void require_failed(const Run& r, std::uint16_t code, std::vector<std::string> events,
                    const std::string& sent) {
  events.push_back("error:" + std::to_string(code));
  Outcome expected{events, sent + server_close(code), 1};
  CHECK(r.all == expected);
  CHECK(r.state == Session::State::closed);
}

std::size_t failing_byte(const std::string& wire, const SessionOptions& options) {
  Recorder rec;
  Session session(rec, options);
  for (std::size_t i = 0; i < wire.size(); ++i) {
    session.feed(std::string_view(wire.data() + i, 1));
    if (session.failed()) return i;
  }
  return wire.size();
}

}  // namespace ws_test
