// Autobahn|Testsuite sections 1-5 (framing, pings/pongs, reserved bits,
// opcodes, fragmentation), mirrored case by case against an echo session.
// Each script is fed whole, byte by byte and in seeded random splits (see
// ws_harness.h); "frame-wise" and "octet-wise" cases become one step per frame
// or per byte so the outcome after each step is checked too. A case ends, as
// in Autobahn, with the client's close 1000.
#include <catch2/catch.hpp>

#include "ws_harness.h"

using namespace ws_test;

namespace {

const std::string kHello = "Hello, world!";
const std::string kBinaryPayload = bytes({0x00, 0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0x00, 0xff});

// A frame with a reserved opcode (FIN set, masked).
std::string reserved_opcode(int op, std::string payload = {}) {
  return encode_raw({static_cast<std::uint8_t>(0x80 | op), std::move(payload)});
}

std::vector<std::string> octets(const std::string& wire) { return chops(wire, 1); }

// Autobahn's payloads: '*' for text, 0xFE for binary. Echoed as one frame.
void echo_case(Opcode op, std::size_t size, std::size_t chop = 0) {
  const std::string payload(size, op == kText ? '*' : '\xfe');
  const char* kind = op == kText ? "text:" : "binary:";
  require_clean(run_case(chops(client_frame(op, payload), chop)), {kind + shown(payload)},
                server_frame(op, payload));
}

}  // namespace

// ---- 1 Framing ------------------------------------------------------------------

TEST_CASE("ws autobahn 1.1.1 text message with payload length 0 is echoed", "[ws][autobahn]") {
  echo_case(kText, 0);
}
TEST_CASE("ws autobahn 1.1.2 text message with payload length 125 is echoed", "[ws][autobahn]") {
  echo_case(kText, 125);
}
TEST_CASE("ws autobahn 1.1.3 text message with payload length 126 is echoed", "[ws][autobahn]") {
  echo_case(kText, 126);
}
TEST_CASE("ws autobahn 1.1.4 text message with payload length 127 is echoed", "[ws][autobahn]") {
  echo_case(kText, 127);
}
TEST_CASE("ws autobahn 1.1.5 text message with payload length 128 is echoed", "[ws][autobahn]") {
  echo_case(kText, 128);
}
TEST_CASE("ws autobahn 1.1.6 text message with payload length 65535 is echoed", "[ws][autobahn]") {
  echo_case(kText, 65535);
}
TEST_CASE("ws autobahn 1.1.7 text message with payload length 65536 is echoed", "[ws][autobahn]") {
  echo_case(kText, 65536);
}
TEST_CASE("ws autobahn 1.1.8 text message of 65536 bytes sent in chops of 997 is echoed",
          "[ws][autobahn]") {
  echo_case(kText, 65536, 997);
}
TEST_CASE("ws autobahn 1.2.1 binary message with payload length 0 is echoed", "[ws][autobahn]") {
  echo_case(kBinary, 0);
}
TEST_CASE("ws autobahn 1.2.2 binary message with payload length 125 is echoed", "[ws][autobahn]") {
  echo_case(kBinary, 125);
}
TEST_CASE("ws autobahn 1.2.3 binary message with payload length 126 is echoed", "[ws][autobahn]") {
  echo_case(kBinary, 126);
}
TEST_CASE("ws autobahn 1.2.4 binary message with payload length 127 is echoed", "[ws][autobahn]") {
  echo_case(kBinary, 127);
}
TEST_CASE("ws autobahn 1.2.5 binary message with payload length 128 is echoed", "[ws][autobahn]") {
  echo_case(kBinary, 128);
}
TEST_CASE("ws autobahn 1.2.6 binary message with payload length 65535 is echoed",
          "[ws][autobahn]") {
  echo_case(kBinary, 65535);
}
TEST_CASE("ws autobahn 1.2.7 binary message with payload length 65536 is echoed",
          "[ws][autobahn]") {
  echo_case(kBinary, 65536);
}
TEST_CASE("ws autobahn 1.2.8 binary message of 65536 bytes sent in chops of 997 is echoed",
          "[ws][autobahn]") {
  echo_case(kBinary, 65536, 997);
}

// ---- 2 Pings and pongs ------------------------------------------------------------

TEST_CASE("ws autobahn 2.1 ping without payload is answered by an empty pong", "[ws][autobahn]") {
  require_clean(run_case({client_frame(kPing, "")}), {"ping:"}, server_frame(kPong, ""));
}
TEST_CASE("ws autobahn 2.2 ping with a small text payload is answered with that payload",
          "[ws][autobahn]") {
  require_clean(run_case({client_frame(kPing, kHello)}), {"ping:" + kHello},
                server_frame(kPong, kHello));
}
TEST_CASE("ws autobahn 2.3 ping with a small binary payload is answered with that payload",
          "[ws][autobahn]") {
  require_clean(run_case({client_frame(kPing, kBinaryPayload)}), {"ping:" + kBinaryPayload},
                server_frame(kPong, kBinaryPayload));
}
TEST_CASE("ws autobahn 2.4 ping with a 125-byte payload is answered", "[ws][autobahn]") {
  const std::string p(125, '\xfe');
  require_clean(run_case({client_frame(kPing, p)}), {"ping:" + shown(p)}, server_frame(kPong, p));
}
TEST_CASE("ws autobahn 2.5 ping with a 126-byte payload fails the connection with 1002",
          "[ws][autobahn]") {
  const std::string wire = encode_raw({0x89, std::string(126, '\xfe')});
  require_failed(run_case({wire}), kCloseProtocolError);
  CHECK(failing_byte(wire) == 1);  // the 7-bit length says it all
}
TEST_CASE("ws autobahn 2.6 ping with a 125-byte payload sent octet-wise is answered",
          "[ws][autobahn]") {
  const std::string p(125, '\xfe');
  const Run r = run_case(octets(client_frame(kPing, p)));
  require_clean(r, {"ping:" + shown(p)}, server_frame(kPong, p));
  CHECK(r.steps[r.steps.size() - 2].sent == server_frame(kPong, p));  // at the last byte
}
TEST_CASE("ws autobahn 2.7 unsolicited pong without payload gets no answer", "[ws][autobahn]") {
  require_clean(run_case({client_frame(kPong, "")}), {"pong:"});
}
TEST_CASE("ws autobahn 2.8 unsolicited pong with payload gets no answer", "[ws][autobahn]") {
  require_clean(run_case({client_frame(kPong, "unsolicited pong payload")}),
                {"pong:unsolicited pong payload"});
}
TEST_CASE("ws autobahn 2.9 unsolicited pong then ping: only the ping is answered",
          "[ws][autobahn]") {
  require_clean(run_case({client_frame(kPong, "unsolicited pong payload"),
                          client_frame(kPing, "ping payload")}),
                {"pong:unsolicited pong payload", "ping:ping payload"},
                server_frame(kPong, "ping payload"));
}
TEST_CASE("ws autobahn 2.10 ten pings get ten pongs, in order", "[ws][autobahn]") {
  std::string wire, pongs;
  std::vector<std::string> events;
  for (int i = 0; i < 10; ++i) {
    const std::string p = "payload-" + std::to_string(i);
    wire += client_frame(kPing, p);
    pongs += server_frame(kPong, p);
    events.push_back("ping:" + p);
  }
  require_clean(run_case({wire}), events, pongs);
}
TEST_CASE("ws autobahn 2.11 ten pings sent octet-wise get ten pongs, each at its last byte",
          "[ws][autobahn]") {
  std::vector<std::string> steps;
  std::string pongs;
  std::vector<std::string> events;
  for (int i = 0; i < 10; ++i) {
    const std::string p = "payload-" + std::to_string(i);
    for (auto& o : octets(client_frame(kPing, p))) steps.push_back(o);
    pongs += server_frame(kPong, p);
    events.push_back("ping:" + p);
  }
  const Run r = run_case(steps);
  require_clean(r, events, pongs);
  const std::size_t frame_size = client_frame(kPing, "payload-0").size();
  CHECK(r.steps[frame_size - 1].sent == server_frame(kPong, "payload-0"));
  CHECK(r.steps[frame_size - 2].sent.empty());
}

// ---- 3 Reserved bits ----------------------------------------------------------------

TEST_CASE("ws autobahn 3.1 text frame with RSV = 1 fails with 1002", "[ws][autobahn]") {
  require_failed(run_case({client_frame(kText, kHello, true, 1)}), kCloseProtocolError);
  CHECK(failing_byte(client_frame(kText, kHello, true, 1)) == 0);
}
TEST_CASE("ws autobahn 3.2 text, then text with RSV = 2, then ping: echo, then 1002",
          "[ws][autobahn]") {
  require_failed(run_case({client_frame(kText, kHello) + client_frame(kText, kHello, true, 2) +
                           client_frame(kPing, "")}),
                 kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
}
TEST_CASE("ws autobahn 3.3 the same with RSV = 3, frame-wise: echo, then 1002, no pong",
          "[ws][autobahn]") {
  const Run r = run_case(
      {client_frame(kText, kHello), client_frame(kText, kHello, true, 3), client_frame(kPing, "")});
  require_failed(r, kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
  CHECK(r.steps[0].sent == server_frame(kText, kHello));  // echoed before the bad frame came
}
TEST_CASE("ws autobahn 3.4 the same with RSV = 4, octet-wise: echo, then 1002", "[ws][autobahn]") {
  std::vector<std::string> steps = octets(
      client_frame(kText, kHello) + client_frame(kText, kHello, true, 4) + client_frame(kPing, ""));
  require_failed(run_case(steps), kCloseProtocolError, {"text:" + kHello},
                 server_frame(kText, kHello));
}
TEST_CASE("ws autobahn 3.5 binary frame with RSV = 5 fails with 1002", "[ws][autobahn]") {
  require_failed(run_case({client_frame(kBinary, kBinaryPayload, true, 5)}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 3.6 ping with RSV = 6 fails with 1002, unanswered", "[ws][autobahn]") {
  require_failed(run_case({client_frame(kPing, kHello, true, 6)}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 3.7 close with RSV = 7 fails with 1002", "[ws][autobahn]") {
  require_failed(run_case({encode_raw({0xF8, bytes({0x03, 0xe8})})}), kCloseProtocolError);
}

// ---- 4 Opcodes ---------------------------------------------------------------------

TEST_CASE("ws autobahn 4.1.1 reserved non-control opcode 3 fails with 1002", "[ws][autobahn]") {
  require_failed(run_case({reserved_opcode(3)}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 4.1.2 reserved non-control opcode 4 with payload fails with 1002",
          "[ws][autobahn]") {
  require_failed(run_case({reserved_opcode(4, "reserved opcode payload")}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 4.1.3 text, opcode 5, ping: echo, then 1002, no pong", "[ws][autobahn]") {
  require_failed(
      run_case({client_frame(kText, kHello) + reserved_opcode(5) + client_frame(kPing, "")}),
      kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
}
TEST_CASE("ws autobahn 4.1.4 text, opcode 6 with payload, ping: echo, then 1002",
          "[ws][autobahn]") {
  require_failed(
      run_case({client_frame(kText, kHello) + reserved_opcode(6, "reserved opcode payload") +
                client_frame(kPing, "")}),
      kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
}
TEST_CASE("ws autobahn 4.1.5 text, opcode 7 with payload, ping, frame-wise: echo, then 1002",
          "[ws][autobahn]") {
  require_failed(run_case({client_frame(kText, kHello),
                           reserved_opcode(7, "reserved opcode payload"), client_frame(kPing, "")}),
                 kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
}
TEST_CASE("ws autobahn 4.2.1 reserved control opcode 11 fails with 1002", "[ws][autobahn]") {
  require_failed(run_case({reserved_opcode(11)}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 4.2.2 reserved control opcode 12 with payload fails with 1002",
          "[ws][autobahn]") {
  require_failed(run_case({reserved_opcode(12, "reserved opcode payload")}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 4.2.3 text, opcode 13, ping: echo, then 1002", "[ws][autobahn]") {
  require_failed(
      run_case({client_frame(kText, kHello) + reserved_opcode(13) + client_frame(kPing, "")}),
      kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
}
TEST_CASE("ws autobahn 4.2.4 text, opcode 14 with payload, ping: echo, then 1002",
          "[ws][autobahn]") {
  require_failed(
      run_case({client_frame(kText, kHello) + reserved_opcode(14, "reserved opcode payload") +
                client_frame(kPing, "")}),
      kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
}
TEST_CASE("ws autobahn 4.2.5 text, opcode 15 with payload, ping, frame-wise: echo, then 1002",
          "[ws][autobahn]") {
  require_failed(
      run_case({client_frame(kText, kHello), reserved_opcode(15, "reserved opcode payload"),
                client_frame(kPing, "")}),
      kCloseProtocolError, {"text:" + kHello}, server_frame(kText, kHello));
}

// ---- 5 Fragmentation ------------------------------------------------------------------

TEST_CASE("ws autobahn 5.1 ping in 2 fragments fails with 1002", "[ws][autobahn]") {
  const std::string wire =
      client_frame(kPing, "fragment1", false) + client_frame(kCont, "fragment2", true);
  require_failed(run_case({wire}), kCloseProtocolError);
  CHECK(failing_byte(wire) == 0);
}
TEST_CASE("ws autobahn 5.2 pong in 2 fragments fails with 1002", "[ws][autobahn]") {
  require_failed(
      run_case({client_frame(kPong, "fragment1", false) + client_frame(kCont, "fragment2", true)}),
      kCloseProtocolError);
}

namespace {
const std::string kFrag1 = client_frame(kText, "fragment1", false);
const std::string kFrag2 = client_frame(kCont, "fragment2", true);
}  // namespace

TEST_CASE("ws autobahn 5.3 text message in 2 fragments is echoed whole", "[ws][autobahn]") {
  require_clean(run_case({kFrag1 + kFrag2}), {"text:fragment1fragment2"},
                server_frame(kText, "fragment1fragment2"));
}
TEST_CASE("ws autobahn 5.4 text message in 2 fragments, frame-wise, is echoed after the last",
          "[ws][autobahn]") {
  const Run r = run_case({kFrag1, kFrag2});
  require_clean(r, {"text:fragment1fragment2"}, server_frame(kText, "fragment1fragment2"));
  CHECK(r.steps[0] == Outcome{});  // nothing happens on the first fragment
}
TEST_CASE("ws autobahn 5.5 text message in 2 fragments, octet-wise, is echoed", "[ws][autobahn]") {
  require_clean(run_case(octets(kFrag1 + kFrag2)), {"text:fragment1fragment2"},
                server_frame(kText, "fragment1fragment2"));
}

namespace {
const std::string kPingMid = client_frame(kPing, "ping payload");
}  // namespace

TEST_CASE("ws autobahn 5.6 text in 2 fragments with a ping between: pong, then echo",
          "[ws][autobahn]") {
  require_clean(run_case({kFrag1 + kPingMid + kFrag2}),
                {"ping:ping payload", "text:fragment1fragment2"},
                server_frame(kPong, "ping payload") + server_frame(kText, "fragment1fragment2"));
}
TEST_CASE("ws autobahn 5.7 the same frame-wise: the pong goes out before the last fragment",
          "[ws][autobahn]") {
  const Run r = run_case({kFrag1, kPingMid, kFrag2});
  require_clean(r, {"ping:ping payload", "text:fragment1fragment2"},
                server_frame(kPong, "ping payload") + server_frame(kText, "fragment1fragment2"));
  CHECK(r.steps[1].sent == server_frame(kPong, "ping payload"));
}
TEST_CASE("ws autobahn 5.8 the same octet-wise: pong, then echo", "[ws][autobahn]") {
  require_clean(run_case(octets(kFrag1 + kPingMid + kFrag2)),
                {"ping:ping payload", "text:fragment1fragment2"},
                server_frame(kPong, "ping payload") + server_frame(kText, "fragment1fragment2"));
}

namespace {
// 5.9-5.14: a continuation frame with nothing to continue, then a text message.
std::string nothing_to_continue(bool fin) {
  return client_frame(kCont, "non-continuation payload", fin) + client_frame(kText, kHello);
}
}  // namespace

TEST_CASE("ws autobahn 5.9 continuation (FIN) with nothing to continue fails with 1002",
          "[ws][autobahn]") {
  require_failed(run_case({nothing_to_continue(true)}), kCloseProtocolError);
  CHECK(failing_byte(nothing_to_continue(true)) == 0);
}
TEST_CASE("ws autobahn 5.10 the same frame-wise fails with 1002", "[ws][autobahn]") {
  require_failed(run_case({client_frame(kCont, "non-continuation payload", true),
                           client_frame(kText, kHello)}),
                 kCloseProtocolError);
}
TEST_CASE("ws autobahn 5.11 the same octet-wise fails with 1002", "[ws][autobahn]") {
  require_failed(run_case(octets(nothing_to_continue(true))), kCloseProtocolError);
}
TEST_CASE("ws autobahn 5.12 continuation (no FIN) with nothing to continue fails with 1002",
          "[ws][autobahn]") {
  require_failed(run_case({nothing_to_continue(false)}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 5.13 the same frame-wise fails with 1002", "[ws][autobahn]") {
  require_failed(run_case({client_frame(kCont, "non-continuation payload", false),
                           client_frame(kText, kHello)}),
                 kCloseProtocolError);
}
TEST_CASE("ws autobahn 5.14 the same octet-wise fails with 1002", "[ws][autobahn]") {
  require_failed(run_case(octets(nothing_to_continue(false))), kCloseProtocolError);
}
TEST_CASE("ws autobahn 5.15 a finished message, then a stray continuation: echo, then 1002",
          "[ws][autobahn]") {
  require_failed(run_case({kFrag1 + kFrag2 + client_frame(kCont, "fragment3", false) +
                           client_frame(kText, "fragment4")}),
                 kCloseProtocolError, {"text:fragment1fragment2"},
                 server_frame(kText, "fragment1fragment2"));
}
TEST_CASE("ws autobahn 5.16 stray continuation (no FIN) before a fragmented message: 1002",
          "[ws][autobahn]") {
  std::string wire;
  for (int i = 0; i < 2; ++i)
    wire += client_frame(kCont, "fragment1", false) + client_frame(kText, "fragment2", false) +
            client_frame(kCont, "fragment3", true);
  require_failed(run_case({wire}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 5.17 stray continuation (FIN) before a fragmented message: 1002",
          "[ws][autobahn]") {
  std::string wire;
  for (int i = 0; i < 2; ++i)
    wire += client_frame(kCont, "fragment1", true) + client_frame(kText, "fragment2", false) +
            client_frame(kCont, "fragment3", true);
  require_failed(run_case({wire}), kCloseProtocolError);
}
TEST_CASE("ws autobahn 5.18 a text frame where a continuation belongs fails with 1002",
          "[ws][autobahn]") {
  const std::string wire = kFrag1 + client_frame(kText, "fragment2", true);
  require_failed(run_case({wire}), kCloseProtocolError);
  CHECK(failing_byte(wire) == kFrag1.size());
}

namespace {
// 5.19 / 5.20: five fragments with two pings among them, in two bursts.
std::vector<std::string> five_fragments_two_pings(bool frame_wise) {
  const std::vector<std::string> first = {
      client_frame(kText, "fragment1", false), client_frame(kCont, "fragment2", false),
      client_frame(kPing, "pongme 1!"), client_frame(kCont, "fragment3", false)};
  const std::vector<std::string> second = {client_frame(kCont, "fragment4", false),
                                           client_frame(kPing, "pongme 2!"),
                                           client_frame(kCont, "fragment5", true)};
  if (frame_wise) {
    std::vector<std::string> steps = first;
    steps.insert(steps.end(), second.begin(), second.end());
    return steps;
  }
  std::string a, b;
  for (const auto& f : first) a += f;
  for (const auto& f : second) b += f;
  return {a, b};
}
const std::string kFiveFragments = "fragment1fragment2fragment3fragment4fragment5";
}  // namespace

TEST_CASE("ws autobahn 5.19 fragments with pings between, in two bursts: each pong at once",
          "[ws][autobahn]") {
  const Run r = run_case(five_fragments_two_pings(false));
  require_clean(r, {"ping:pongme 1!", "ping:pongme 2!", "text:" + kFiveFragments},
                server_frame(kPong, "pongme 1!") + server_frame(kPong, "pongme 2!") +
                    server_frame(kText, kFiveFragments));
  CHECK(r.steps[0].sent == server_frame(kPong, "pongme 1!"));  // before the "wait"
}
TEST_CASE("ws autobahn 5.20 the same frame-wise: pongs at once, echo after the last",
          "[ws][autobahn]") {
  const Run r = run_case(five_fragments_two_pings(true));
  require_clean(r, {"ping:pongme 1!", "ping:pongme 2!", "text:" + kFiveFragments},
                server_frame(kPong, "pongme 1!") + server_frame(kPong, "pongme 2!") +
                    server_frame(kText, kFiveFragments));
  CHECK(r.steps[2].sent == server_frame(kPong, "pongme 1!"));
  CHECK(r.steps[5].sent == server_frame(kPong, "pongme 2!"));
  CHECK(r.steps[6].sent == server_frame(kText, kFiveFragments));
}
