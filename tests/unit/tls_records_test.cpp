// A server session's own TLS 1.3 records after its handshake (the SSL
// object freed; lib/src/tls/record_layer.h): against OpenSSL's client for
// every suite, KeyUpdate, padding and resumption; and, on records this file
// seals itself, every refusal RFC 8446 asks for, with the alert the layer
// sends decrypted and checked.
#include <heartwheel/common/error.h>
#include <heartwheel/tls/session.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "record_layer.h"  // lib/src/tls (private)
#include "tls_support.h"

using namespace tls_test;
namespace d = heartwheel::tls::detail;

namespace {

tls::ContextOptions client_with_suite(const char* suite) {
  tls::ContextOptions o = client_options(certs().ec_one.certificate);
  o.ciphersuites = suite;
  return o;
}

// An established pair whose client allows only `suite`.
struct OnSuite {
  explicit OnSuite(const char* suite) : client(client_with_suite(suite)) {}
  tls::Context server{server_options(certs().ec_one)};
  tls::Context client;
  Pair p = connect(client, server);
};

// Everything `from` has to say fed to `to` in pieces of 1 to 700 bytes.
void deliver_in_pieces(End& from, End& to, unsigned seed) {
  std::mt19937 rng(seed);
  const std::string wire = std::exchange(from.out, {});
  std::string_view rest = wire;
  while (!rest.empty()) {
    const std::size_t n = std::min<std::size_t>(rest.size(), 1 + rng() % 700);
    deliver(to, rest.substr(0, n));
    rest.remove_prefix(n);
  }
}

}  // namespace

TEST_CASE(
    "A TLS 1.3 server frees its SSL object after the handshake and carries data on each suite",
    "[tls][records]") {
  const char* suite =
      GENERATE("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256");
  OnSuite on(suite);
  Pair& p = on.p;
  REQUIRE(p.server.session.established());
  CHECK(p.server.session.native_handle() == nullptr);
  CHECK(p.client.session.native_handle() != nullptr);  // a client keeps its SSL object
  CHECK(p.server.session.version() == "TLSv1.3");
  CHECK(p.server.session.cipher() == suite);
  CHECK(p.client.session.cipher() == suite);
  CHECK(p.server.session.alpn() == "http/1.1");
  CHECK(p.server.session.server_name() == "localhost");
  CHECK_FALSE(p.server.session.resumed());

  const std::string up = random_bytes(1 << 20, 1);
  REQUIRE_FALSE(p.client.session.write(up, p.client.out));
  deliver_in_pieces(p.client, p.server, 2);
  CHECK(p.server.received == up);

  const std::string down = random_bytes(300000, 3);
  REQUIRE_FALSE(p.server.session.write(down, p.server.out));
  REQUIRE_FALSE(p.server.session.write("", p.server.out));
  deliver_in_pieces(p.server, p.client, 4);
  CHECK(p.client.received == down);
  CHECK(p.client.failures + p.server.failures == 0);

  // A caller's buffer smaller than a record: the rest is handed out next call.
  const std::string msg = random_bytes(20000, 5);
  REQUIRE_FALSE(p.client.session.write(msg, p.client.out));
  const std::string wire = std::exchange(p.client.out, {});
  char small[1000];
  std::string got;
  std::string_view rest = wire;
  for (int calls = 0; calls < 100; ++calls) {
    const tls::FeedResult r = p.server.session.feed(rest, small, p.server.out);
    got.append(small, r.plaintext);
    rest.remove_prefix(r.consumed);
    if (!r.plaintext_out_full) break;
  }
  CHECK(rest.empty());
  CHECK(got == msg);

  // close_notify both ways.
  p.server.session.close(p.server.out);
  deliver(p.client, std::exchange(p.server.out, {}));
  CHECK(p.client.peer_closes == 1);
  p.client.session.close(p.client.out);
  deliver(p.server, std::exchange(p.client.out, {}));
  CHECK(p.server.peer_closes == 1);
  CHECK(p.server.session.write("late", p.server.out) == heartwheel::errc::closed);
}

TEST_CASE("A TLS 1.3 server keeps its SSL object when its Context says so", "[tls][records]") {
  // (Under TLS 1.2 it always does: tls_session_test.cpp.)
  tls::ContextOptions so = server_options(certs().ec_one);
  so.free_ssl_after_handshake = false;
  tls::Context server(so);
  tls::Context client(client_options(certs().ec_one.certificate));
  Pair p = connect(client, server);
  REQUIRE(p.server.session.established());
  CHECK(p.server.session.version() == "TLSv1.3");
  CHECK(p.server.session.native_handle() != nullptr);
  REQUIRE_FALSE(p.client.session.write("hello", p.client.out));
  pump(p.client, p.server);
  CHECK(p.server.received == "hello");
}

TEST_CASE("A client's KeyUpdate moves the server's read key on, and an asked-for one both keys",
          "[tls][records]") {
  const char* suite =
      GENERATE("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256");
  OnSuite on(suite);
  Pair& p = on.p;
  REQUIRE(p.server.session.native_handle() == nullptr);
  SSL* c = p.client.session.native_handle();
  std::string expect_up, expect_down;
  // `text` from one end to the other; every byte sent so far must have come.
  auto send = [&p](End& from, End& to, const std::string& text, std::string& expect) {
    REQUIRE_FALSE(from.session.write(text, from.out));
    expect += text;
    pump(p.client, p.server);
    REQUIRE(to.failures == 0);
    CHECK(to.received == expect);
  };
  for (int round = 0; round < 6; ++round) {
    const int kind = round % 2 == 0 ? SSL_KEY_UPDATE_NOT_REQUESTED : SSL_KEY_UPDATE_REQUESTED;
    REQUIRE(SSL_key_update(c, kind) == 1);
    // OpenSSL sends the KeyUpdate before the next record it writes.
    send(p.client, p.server, "up " + std::to_string(round), expect_up);
    // Asked for: the server answered with its own KeyUpdate, which the
    // client followed, so the server's next record is under its new key.
    send(p.server, p.client, "down " + std::to_string(round), expect_down);
  }
}

TEST_CASE("Records a client pads are read to their content", "[tls][records]") {
  tls::Context server(server_options(certs().ec_one));
  tls::Context client(client_options(certs().ec_one.certificate));
  Pair p = connect(client, server);
  REQUIRE(SSL_set_block_padding(p.client.session.native_handle(), 512) == 1);
  const std::string msg = random_bytes(3000, 9);
  REQUIRE_FALSE(p.client.session.write("a", p.client.out));
  CHECK(p.client.out.size() == 5 + 512 + 16);  // one byte padded to a block
  REQUIRE_FALSE(p.client.session.write(msg, p.client.out));
  pump(p.client, p.server);
  CHECK(p.server.received == "a" + msg);
  CHECK(p.server.failures == 0);
}

TEST_CASE("A ticket a server sent before freeing its SSL object resumes the next connection",
          "[tls][records]") {
  tls::Context server(server_options(certs().ec_one));
  tls::ContextOptions co = client_options(certs().ec_one.certificate);
  co.client_session_cache = true;
  tls::Context client(co);
  Pair first = connect(client, server);
  REQUIRE(first.server.session.native_handle() == nullptr);
  // The tickets came in the server's last flight; the client read them.
  REQUIRE_FALSE(first.server.session.write("x", first.server.out));
  pump(first.client, first.server);
  Pair second = connect(client, server);
  REQUIRE(second.server.session.established());
  CHECK(second.server.session.resumed());
  CHECK(second.client.session.resumed());
  CHECK(second.server.session.native_handle() == nullptr);
  REQUIRE_FALSE(second.client.session.write("again", second.client.out));
  pump(second.client, second.server);
  CHECK(second.server.received == "again");
}

// ---- the record layer on records sealed here -------------------------------------

namespace {

// The client's end of a RecordLayer, with secrets made up for the test.
struct Peer {
  explicit Peer(d::Suite s) : suite(s) {
    d::TrafficSecrets secrets;
    const std::size_t n = d::secret_size(s);
    std::memset(secrets.client, 0x11, n);
    std::memset(secrets.server, 0x22, n);
    secrets.client_size = secrets.server_size = static_cast<std::uint8_t>(n);
    std::memcpy(write.secret, secrets.client, n);
    std::memcpy(read.secret, secrets.server, n);
    REQUIRE(write.derive(s));
    REQUIRE(read.derive(s));
    REQUIRE(layer.start(s, secrets, 0));
  }
  // A record holding `inner` (a whole TLSInnerPlaintext: content, type,
  // padding) under the client's key, with this outer header.
  std::string record(std::string_view inner, std::uint8_t outer_type = 23,
                     std::uint16_t version = 0x0303) {
    const std::size_t length = inner.size() + d::kTagSize;
    std::string r(5 + length, '\0');
    r[0] = static_cast<char>(outer_type);
    r[1] = static_cast<char>(version >> 8);
    r[2] = static_cast<char>(version);
    r[3] = static_cast<char>(length >> 8);
    r[4] = static_cast<char>(length);
    std::uint8_t nonce[d::kIvSize];
    write.nonce(nonce);
    REQUIRE(d::seal(suite, write.key, nonce, std::string_view(r).substr(0, 5),
                    inner.substr(0, inner.size() - 1), static_cast<std::uint8_t>(inner.back()),
                    reinterpret_cast<std::uint8_t*>(r.data() + 5)));
    ++write.seq;
    return r;
  }
  std::string data(std::string_view content) { return record(std::string(content) + '\x17'); }
  // What the layer sent: each record's inner type and content.
  std::vector<std::pair<int, std::string>> sent() {
    std::vector<std::pair<int, std::string>> out;
    std::string_view rest = layer_out;
    while (rest.size() >= 5) {
      const std::size_t length =
          std::size_t{static_cast<std::uint8_t>(rest[3])} << 8 | static_cast<std::uint8_t>(rest[4]);
      REQUIRE(rest.size() >= 5 + length);
      std::string inner(length - d::kTagSize, '\0');
      std::uint8_t nonce[d::kIvSize];
      read.nonce(nonce);
      REQUIRE(d::open(suite, read.key, nonce, rest.substr(0, 5), rest.substr(5, length),
                      reinterpret_cast<std::uint8_t*>(inner.data())));
      ++read.seq;
      const int type = static_cast<std::uint8_t>(inner.back());
      inner.pop_back();
      out.emplace_back(type, inner);
      rest.remove_prefix(5 + length);
    }
    REQUIRE(rest.empty());
    layer_out.clear();
    return out;
  }
  d::RecordLayer::Read feed(std::string_view bytes) {
    last = layer.read(bytes, buffer, layer_out);
    received.append(buffer, last.plaintext);
    return last;
  }
  d::Suite suite;
  d::TrafficKeys write, read;
  d::RecordLayer layer;
  std::string layer_out, received;
  char buffer[1 << 15];
  d::RecordLayer::Read last;
};

std::string reason(std::uint32_t code) {
  // The error strings load with libssl's first context; a test case run
  // alone (ctest runs each by itself) may have made none yet.
  OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, nullptr);
  const char* r = ERR_reason_error_string(code);
  return r ? r : "";
}

const std::string kAlertFatal = std::string("\x02", 1);

}  // namespace

TEST_CASE("Records that break RFC 8446 fail the layer with the alert it names", "[tls][records]") {
  struct Case {
    const char* what;
    std::string (*make)(Peer&);
    const char* reason;
    int alert;  // -1: none sent
  };
  const Case cases[] = {
      {"a plaintext handshake record", [](Peer& p) { return p.record("x\x16", 22); },
       "bad record type", 10},
      {"a change_cipher_spec after the handshake",
       [](Peer&) { return std::string("\x14\x03\x03\x00\x01\x01", 6); }, "unexpected record", 10},
      {"an outer version other than 0x0303", [](Peer& p) { return p.record("x\x17", 23, 0x0301); },
       "wrong version number", 50},
      {"a record over 2^14 + 256 bytes",
       [](Peer&) { return std::string("\x17\x03\x03\x41\x01", 5) + std::string(16641, 'x'); },
       "encrypted length too long", 22},
      {"a tag that does not verify",
       [](Peer& p) {
         std::string r = p.data("tampered");
         r.back() ^= 1;
         return r;
       },
       "decryption failed or bad record mac", 20},
      {"a record too short for a tag",
       [](Peer&) { return std::string("\x17\x03\x03\x00\x05xxxxx", 10); },
       "decryption failed or bad record mac", 20},
      {"an inner plaintext of zeros", [](Peer& p) { return p.record(std::string(40, '\0')); },
       "bad record type", 10},
      {"content over 2^14 bytes",
       [](Peer& p) { return p.record(std::string(16385, 'x') + '\x17'); }, "data length too long",
       22},
      {"an inner change_cipher_spec", [](Peer& p) { return p.record("\x01\x14"); },
       "unexpected record", 10},
      {"an alert of three bytes",
       [](Peer& p) { return p.record(std::string("\x02\x28\x00\x15", 4)); }, "invalid alert", 50},
      {"a fatal alert from the peer",
       [](Peer& p) { return p.record(std::string("\x02\x28\x15", 3)); },
       "sslv3 alert handshake failure", -1},
      {"a NewSessionTicket from the client",
       [](Peer& p) { return p.record(std::string("\x04\x00\x00\x01\x00\x16", 6)); },
       "unexpected message", 10},
      {"an empty handshake record", [](Peer& p) { return p.record("\x16"); }, "unexpected message",
       10},
      {"a KeyUpdate of two bytes",
       [](Peer& p) { return p.record(std::string("\x18\x00\x00\x02\x00\x00\x16", 7)); },
       "bad length", 50},
      {"a KeyUpdate asking for request 2",
       [](Peer& p) { return p.record(std::string("\x18\x00\x00\x01\x02\x16", 6)); },
       "bad key update", 47},
      {"bytes after a KeyUpdate in its record",
       [](Peer& p) { return p.record(std::string("\x18\x00\x00\x01\x00\x18\x16", 7)); },
       "not on record boundary", 10},
      {"data between the pieces of a KeyUpdate",
       [](Peer& p) {
         std::string r = p.record(std::string("\x18\x00\x16", 3));
         return r + p.data("between");  // sealed in this order: sequence numbers
       },
       "unexpected record", 10},
  };
  const d::Suite suite = GENERATE(d::Suite::aes_128_gcm_sha256, d::Suite::aes_256_gcm_sha384,
                                  d::Suite::chacha20_poly1305_sha256);
  for (const Case& c : cases) {
    INFO(c.what);
    Peer p(suite);
    const std::string before = p.data("before");
    const std::string bad = c.make(p);
    p.feed(before + bad + p.data("after"));
    CHECK(p.received == "before");
    REQUIRE(p.last.error != 0);
    CHECK(reason(p.last.error) == c.reason);
    const auto sent = p.sent();
    if (c.alert < 0) {
      CHECK(sent.empty());
    } else {
      REQUIRE(sent.size() == 1);
      CHECK(sent[0].first == 21);
      CHECK(sent[0].second == kAlertFatal + static_cast<char>(c.alert));
    }
    // Failed for good: nothing more is read or written.
    CHECK(p.feed(p.data("later")).consumed == 0);
    CHECK(p.layer.write("x", p.layer_out) != 0);
  }
}

TEST_CASE("The layer reads records cut anywhere, a KeyUpdate cut across records, and user_canceled",
          "[tls][records]") {
  Peer p(d::Suite::aes_128_gcm_sha256);
  std::string wire = p.data("one ");
  wire += p.record(std::string("\x18\x00", 2) + '\x16');      // KeyUpdate, first piece
  wire += p.record(std::string("\x00\x01\x01", 3) + '\x16');  // the rest: update_requested
  REQUIRE(p.write.update(p.suite));                           // the client's key moves on
  wire += p.record(std::string("\x01\x5a", 2) + '\x15');      // user_canceled: ignored
  wire += p.record(std::string("two ") + '\x17' + std::string(100, '\0'));  // padded
  wire += p.data("");                                                       // empty data: allowed
  wire += p.data("three");
  for (std::size_t i = 0; i < wire.size(); ++i) {  // one byte at a time
    const auto r = p.feed(std::string_view(wire).substr(i, 1));
    REQUIRE(r.error == 0);
    REQUIRE(r.consumed == 1);
  }
  CHECK(p.received == "one two three");
  // The answer to update_requested, under the old key, then the new one.
  auto sent = p.sent();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].first == 22);
  CHECK(sent[0].second == std::string("\x18\x00\x00\x01\x00", 5));
  REQUIRE(p.read.update(p.suite));
  REQUIRE(p.layer.write("reply", p.layer_out) == 0);
  sent = p.sent();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].second == "reply");
  // close_notify: reading stops there, the bytes after it are not taken.
  const std::string notify = p.record(std::string("\x01\x00", 2) + '\x15');
  const std::string after = p.data("ignored");
  const auto r = p.feed(notify + after);
  CHECK(r.peer_closed);
  CHECK(r.consumed == notify.size());
  CHECK(p.feed(after).consumed == 0);
  // The server may still write (a half-close), then closes.
  REQUIRE(p.layer.write("bye", p.layer_out) == 0);
  REQUIRE(p.layer.close_notify(p.layer_out) == 0);
  sent = p.sent();
  REQUIRE(sent.size() == 2);
  CHECK(sent[1].first == 21);
  CHECK(sent[1].second == std::string("\x01\x00", 2));
  CHECK(p.layer.write("more", p.layer_out) != 0);
}

TEST_CASE("More than 32 KeyUpdates without application data between them fail the layer",
          "[tls][records]") {
  // Each may ask for an answer: a flood would have the server write for
  // nothing. OpenSSL allows 32 in a row too.
  Peer p(d::Suite::aes_128_gcm_sha256);
  const std::string asked = std::string("\x18\x00\x00\x01\x01", 5) + '\x16';
  // One KeyUpdate asking for an answer; the answer read under the old key.
  auto key_update = [&]() {
    const auto r = p.feed(p.record(asked));
    REQUIRE(p.write.update(p.suite));
    if (r.error != 0) return r;
    const auto sent = p.sent();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].first == 22);
    CHECK(sent[0].second == std::string("\x18\x00\x00\x01\x00", 5));
    REQUIRE(p.read.update(p.suite));  // the layer's write key moved on
    return r;
  };
  // 32, data, 32 more: each run within the limit, every one answered.
  for (int i = 0; i < 32; ++i) REQUIRE(key_update().error == 0);
  REQUIRE(p.feed(p.data("between")).error == 0);
  for (int i = 0; i < 32; ++i) REQUIRE(key_update().error == 0);
  CHECK(p.received == "between");
  // An empty data record does not reset the count: the 33rd fails.
  REQUIRE(p.feed(p.data("")).error == 0);
  const auto r = key_update();
  REQUIRE(r.error != 0);
  CHECK(reason(r.error) == "too many key updates");
  const auto sent = p.sent();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].first == 21);
  CHECK(sent[0].second == kAlertFatal + static_cast<char>(10));
}
