// heartwheel/ws/handshake.h - the server side of the WebSocket opening
// handshake (RFC 6455 section 4.2), without I/O.
//
// What it is
//   accept_handshake() takes an HTTP request parsed by the http layer
//   (heartwheel/http/message.h) and decides: either 101 Switching Protocols,
//   with the headers that complete the handshake, or a refusal with a status,
//   a reason and the headers the RFC asks for. response_bytes() serialises
//   either one; after a 101 the connection speaks WebSocket (give it to a
//   ws::Session, heartwheel/ws/session.h), after a refusal it is closed.
//
//   Checked, in this order (first failure wins):
//     method GET ............................................ else 405 + Allow: GET
//     HTTP/1.1 or later ..................................... else 400
//     Host present .......................................... else 400
//     Upgrade has the token "websocket" (case-insensitive) .. else 400
//     Connection has the token "upgrade" (case-insensitive,
//       comma lists, several Connection headers) ............ else 400
//     Sec-WebSocket-Version: 13 ............................. else 426 + Sec-WebSocket-Version: 13
//     exactly one Sec-WebSocket-Key, base64 of 16 bytes ...... else 400
//     HandshakeOptions::check_origin(Origin) ................. else 403
//   Subprotocol: the first of the server's subprotocols (its order of
//   preference) that the client lists in Sec-WebSocket-Protocol (comma lists,
//   several headers; names compare exactly). No common one: accepted without
//   a subprotocol, as RFC 6455 4.2.2 says (a client that needs one then
//   closes). Extensions: permessage-deflate when HandshakeOptions::deflate
//   enables it and the client offers it (negotiate_deflate,
//   heartwheel/ws/deflate.h: the answer goes out as Sec-WebSocket-Extensions
//   and into HandshakeResult::deflate); any other extension is ignored.
//
// Cost: one pass over the headers; one SHA-1 (OpenSSL libcrypto) and one
// base64 encoding per accepted handshake; the result owns a few small strings.
// Threads: pure functions (check_origin runs on the caller's thread).
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/ws/deflate.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::ws {

// Appended to the client's key before hashing (RFC 6455 1.3).
inline constexpr std::string_view kAcceptGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

struct HandshakeOptions {
  // Subprotocols this server speaks, most preferred first. Empty: none is
  // ever selected.
  std::vector<std::string> subprotocols;
  // Called with the Origin header's value, or "" when the request has none
  // (non-browser clients send none). Returning false refuses with 403. Empty:
  // every origin is accepted.
  std::function<bool(std::string_view origin)> check_origin;
  // permessage-deflate: off unless enabled (heartwheel/ws/deflate.h).
  DeflateOptions deflate;
};

struct HandshakeResult {
  int status = 0;  // 101 accepted; 400, 403, 405 or 426 refused
  // Why the request was refused, one line for logs and the response body;
  // empty when accepted.
  std::string error;
  std::string subprotocol;  // the one selected, empty if none
  DeflateParams deflate;    // permessage-deflate as agreed (enabled false: none)
  // Response headers. 101: Upgrade, Connection, Sec-WebSocket-Accept,
  // Sec-WebSocket-Protocol when one was selected and
  // Sec-WebSocket-Extensions when compression was agreed; 405: Allow; 426:
  // Sec-WebSocket-Version. The owner may add its own (Set-Cookie, ...) before
  // calling response_bytes().
  http::Headers headers;

  bool accepted() const noexcept { return status == 101; }
  // The whole response: status line, headers and a blank line; a refusal adds
  // Content-Type, Content-Length and Connection: close and `error` as a
  // text/plain body.
  std::string response_bytes() const;
};

// Validates `request` as a WebSocket opening handshake. Never throws for a bad
// request (that is a refusal); throws std::runtime_error only if OpenSSL
// cannot compute SHA-1.
HandshakeResult accept_handshake(const http::Request& request,
                                 const HandshakeOptions& options = {});

// True when the request asks for a WebSocket upgrade at all (an Upgrade header
// with the "websocket" token), so a router can tell WebSocket requests from
// plain ones before calling accept_handshake.
bool is_websocket_upgrade(const http::Request& request) noexcept;

// True if any header called `name` holds `token` in its comma-separated list
// (ASCII case-insensitive, optional whitespace around elements).
bool header_has_token(const http::Headers& headers, std::string_view name,
                      std::string_view token) noexcept;

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key:
// base64(SHA-1(key + kAcceptGuid)), 28 characters. RFC 6455's example:
// accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
// Throws std::runtime_error if OpenSSL fails (it does not for SHA-1).
std::string accept_key(std::string_view client_key);

// True when `key` is 24 characters of base64 that decode to exactly 16 bytes.
bool is_valid_client_key(std::string_view key) noexcept;

// A fresh Sec-WebSocket-Key: 16 random bytes (OpenSSL RAND_bytes), base64.
// For clients (the load harness, tests). Throws std::runtime_error if OpenSSL
// has no randomness.
std::string make_client_key();

}  // namespace heartwheel::ws
