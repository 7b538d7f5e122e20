// permessage-deflate's negotiation (RFC 7692 5, 7.1) as tables: a client's
// offers and the server's answer (or its refusal of each bad offer), under
// the stateless default and with context takeover; a client's check of the
// server's answer; the opening handshake carrying it.
#include <heartwheel/ws/deflate.h>
#include <heartwheel/ws/handshake.h>

#include <catch2/catch.hpp>

using namespace heartwheel;
using namespace heartwheel::ws;

namespace {

constexpr const char* kStateless =
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

DeflateOptions on(bool context = false) {
  DeflateOptions o;
  o.enabled = true;
  o.context_takeover = context;
  return o;
}

std::string answer(std::vector<std::string> headers, const DeflateOptions& o) {
  http::Headers h;
  for (std::string& v : headers) h.push_back({"Sec-WebSocket-Extensions", std::move(v)});
  return negotiate_deflate(h, o).response();
}

struct Row {
  std::vector<std::string> offers;  // one Sec-WebSocket-Extensions header each
  std::string answer;               // "": declined
};

}  // namespace

TEST_CASE("deflate negotiation: the stateless default answers each offer or declines it",
          "[ws][deflate][negotiation]") {
  const std::string base = std::string(kStateless);
  const Row rows[] = {
      // What browsers send: Chrome offers client_max_window_bits, Firefox nothing.
      {{"permessage-deflate; client_max_window_bits"}, kStateless},
      {{"permessage-deflate"}, kStateless},
      {{"permessage-deflate;server_no_context_takeover"}, kStateless},
      {{"permessage-deflate; client_no_context_takeover"}, kStateless},
      // server_max_window_bits: echoed (8: accepted, our messages then go plain).
      {{"permessage-deflate; server_max_window_bits=10"}, base + "; server_max_window_bits=10"},
      {{"permessage-deflate; server_max_window_bits=\"12\""}, base + "; server_max_window_bits=12"},
      {{"permessage-deflate; server_max_window_bits=8"}, base + "; server_max_window_bits=8"},
      {{"permessage-deflate; server_max_window_bits = 15"}, base + "; server_max_window_bits=15"},
      // Refused offers (RFC 7692 5: declined, the handshake goes on without).
      {{"permessage-deflate; server_max_window_bits"}, ""},
      {{"permessage-deflate; server_max_window_bits=16"}, ""},
      {{"permessage-deflate; server_max_window_bits=7"}, ""},
      {{"permessage-deflate; server_max_window_bits=010"}, ""},
      {{"permessage-deflate; server_max_window_bits=1a"}, ""},
      {{"permessage-deflate; client_max_window_bits=7"}, ""},
      {{"permessage-deflate; client_max_window_bits=\"\""}, ""},
      {{"permessage-deflate; server_no_context_takeover=1"}, ""},
      {{"permessage-deflate; client_no_context_takeover=\"x\""}, ""},
      {{"permessage-deflate; mystery"}, ""},
      {{"permessage-deflate; server_no_context_takeover; server_no_context_takeover"}, ""},
      {{"permessage-deflate; client_max_window_bits; client_max_window_bits=9"}, ""},
      {{"Permessage-Deflate"}, ""},  // tokens compare exactly
      {{"x-webkit-deflate-frame"}, ""},
      // Several offers: the first acceptable one, in order, across headers.
      {{"permessage-deflate; mystery, permessage-deflate; server_max_window_bits=11"},
       base + "; server_max_window_bits=11"},
      {{"x-webkit-deflate-frame, permessage-deflate"}, kStateless},
      {{"foo; bar=1", "permessage-deflate; server_max_window_bits=9"},
       base + "; server_max_window_bits=9"},
      {{"permessage-deflate; server_max_window_bits=9, permessage-deflate"},
       base + "; server_max_window_bits=9"},
      {{", permessage-deflate ,"}, kStateless},  // empty list elements
      // A header that does not parse declines everything in it.
      {{"permessage-deflate;"}, ""},
      {{"permessage-deflate; client_max_window_bits=\"1 0\""}, ""},
      {{"permessage-deflate; server_max_window_bits=\"10"}, ""},
      {{"permessage-deflate x"}, ""},
      {{"permessage-deflate", "; broken"}, ""},
      {{}, ""},
  };
  for (const Row& row : rows) {
    std::string shown;
    for (const std::string& o : row.offers) shown += "[" + o + "] ";
    INFO("offers: " << shown);
    CHECK(answer(row.offers, on()) == row.answer);
  }
  DeflateOptions off = on();
  off.enabled = false;
  CHECK(answer({"permessage-deflate"}, off).empty());
}

TEST_CASE("deflate negotiation: context takeover keeps the server's window capped, clients none",
          "[ws][deflate][negotiation]") {
  DeflateOptions o = on(true);
  o.max_window_bits = 11;
  const std::string keep = "permessage-deflate; client_no_context_takeover";
  const Row rows[] = {
      {{"permessage-deflate"}, keep + "; server_max_window_bits=11"},
      {{"permessage-deflate; client_max_window_bits"}, keep + "; server_max_window_bits=11"},
      {{"permessage-deflate; client_max_window_bits=9; server_max_window_bits=13"},
       keep + "; server_max_window_bits=11"},
      {{"permessage-deflate; client_max_window_bits=15; server_max_window_bits=10"},
       keep + "; server_max_window_bits=10"},
      // Our side stateless when asked: its window comes from the pool, uncapped.
      {{"permessage-deflate; server_no_context_takeover; client_max_window_bits"},
       "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
      {{"permessage-deflate; client_no_context_takeover"}, keep + "; server_max_window_bits=11"},
      {{"permessage-deflate; server_max_window_bits=16"}, ""},
  };
  for (const Row& row : rows) {
    INFO("offer: " << (row.offers.empty() ? "" : row.offers[0]));
    CHECK(answer(row.offers, o) == row.answer);
  }
}

TEST_CASE("deflate negotiation: the client accepts a conforming answer and refuses the rest",
          "[ws][deflate][negotiation]") {
  struct Case {
    const char* answer;
    bool context;  // what was offered: context takeover, or stateless
    bool ok;
  };
  const Case cases[] = {
      {kStateless, false, true},
      {"permessage-deflate; server_no_context_takeover", false, true},
      {"permessage-deflate;server_no_context_takeover; server_max_window_bits=10", false, true},
      {"permessage-deflate", false, false},  // server_no_context_takeover was asked for
      {"permessage-deflate; server_no_context_takeover; client_max_window_bits=10", false, false},
      {"permessage-deflate; server_no_context_takeover; mystery", false, false},
      {"permessage-deflate; server_no_context_takeover; server_no_context_takeover", false, false},
      {"permessage-deflate; server_no_context_takeover; server_max_window_bits=16", false, false},
      {"permessage-deflate; server_no_context_takeover, permessage-deflate", false, false},
      {"x-webkit-deflate-frame", false, false},
      {"permessage-deflate;", false, false},
      {"permessage-deflate; client_max_window_bits=10", true, true},
      {"permessage-deflate", true, true},
      {"permessage-deflate; client_max_window_bits", true, false},  // an answer needs a value
  };
  for (const Case& c : cases) {
    INFO("answer: " << c.answer << (c.context ? " (context offered)" : " (stateless offered)"));
    std::string error;
    const auto params = accept_deflate_response(c.answer, on(c.context), error);
    CHECK(params.has_value() == c.ok);
    if (params) CHECK(params->enabled);
    if (!params) CHECK_FALSE(error.empty());
  }
  std::string error;
  const auto declined = accept_deflate_response("", on(), error);
  REQUIRE(declined.has_value());
  CHECK_FALSE(declined->enabled);
  DeflateOptions off;
  CHECK_FALSE(accept_deflate_response(kStateless, off, error).has_value());
}

TEST_CASE("deflate negotiation: a client's offer and the server's answer agree both ways",
          "[ws][deflate][negotiation]") {
  for (const bool server_context : {false, true}) {
    for (const bool client_context : {false, true}) {
      INFO("server context " << server_context << ", client context " << client_context);
      const std::string offer = deflate_offer(on(client_context));
      const DeflateParams agreed =
          negotiate_deflate({{"Sec-WebSocket-Extensions", offer}}, on(server_context));
      REQUIRE(agreed.enabled);
      std::string error;
      const auto seen = accept_deflate_response(agreed.response(), on(client_context), error);
      REQUIRE(seen.has_value());
      CHECK(seen->server_no_context_takeover == agreed.server_no_context_takeover);
      CHECK(seen->client_no_context_takeover == agreed.client_no_context_takeover);
      CHECK(seen->server_max_window_bits == agreed.server_max_window_bits);
      CHECK(seen->client_max_window_bits == agreed.client_max_window_bits);
      // Stateless on either side keeps the server's sends stateless.
      CHECK(agreed.server_no_context_takeover == (!server_context || !client_context));
    }
  }
  CHECK(deflate_offer(DeflateOptions{}).empty());
}

TEST_CASE("deflate negotiation: the 101 carries the answer, and no extension without an offer",
          "[ws][deflate][handshake]") {
  http::Request r;
  r.method = "GET";
  r.target = "/chat";
  r.headers = {{"Host", "h"},
               {"Upgrade", "websocket"},
               {"Connection", "Upgrade"},
               {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
               {"Sec-WebSocket-Version", "13"},
               {"Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"}};
  HandshakeOptions o;
  o.deflate = on();
  HandshakeResult accepted = accept_handshake(r, o);
  REQUIRE(accepted.accepted());
  CHECK(accepted.deflate.enabled);
  CHECK(accepted.response_bytes() ==
        "HTTP/1.1 101 Switching Protocols\r\n"
        "Upgrade: websocket\r\n"
        "Connection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
        "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
        "client_no_context_takeover\r\n"
        "\r\n");
  // Compression off (the default): the offer is ignored.
  const HandshakeResult plain = accept_handshake(r, HandshakeOptions{});
  CHECK_FALSE(plain.deflate.enabled);
  CHECK(plain.response_bytes().find("Extensions") == std::string::npos);
  r.headers.pop_back();
  CHECK(accept_handshake(r, o).response_bytes().find("Extensions") == std::string::npos);
}

TEST_CASE("deflate options: bad values are refused naming the field", "[ws][deflate]") {
  const auto refused = [](auto change, const char* field) {
    DeflateOptions o = on();
    change(o);
    INFO(field);
    CHECK_THROWS_WITH(o.validate(), Catch::Contains(field));
  };
  refused([](DeflateOptions& o) { o.level = 0; }, "level");
  refused([](DeflateOptions& o) { o.level = 10; }, "level");
  refused([](DeflateOptions& o) { o.max_window_bits = 8; }, "max_window_bits");
  refused([](DeflateOptions& o) { o.mem_level = 0; }, "mem_level");
  refused([](DeflateOptions& o) { o.inflate_budget = 0; }, "inflate_budget");
  CHECK_NOTHROW(on().validate());
}
