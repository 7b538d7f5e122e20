// heartwheel/ws/client_handshake.h - the client side of the WebSocket
// opening handshake (RFC 6455 section 4.1), without I/O.
//
// What it is
//   A ClientHandshake makes the upgrade request (request()) and checks the
//   server's answer as its bytes arrive (feed()): 101 Switching Protocols,
//   Upgrade: websocket, Connection: upgrade, Sec-WebSocket-Accept matching
//   our key, a subprotocol only if it is one we offered, extensions only if
//   we asked for some. What follows the 101 in the same bytes is the
//   server's first frames: feed() leaves them in its input for the
//   ws::Session (client role) that takes over.
//
//   Extensions: the request's Sec-WebSocket-Extensions is sent as given
//   (passed through); the server's answer is in extensions(). The session
//   implements none (a frame with RSV bits set fails it with 1002), so ask
//   only for an extension the server may refuse, or handle it yourself. A
//   server that names an extension we did not ask for is refused (RFC 6455
//   4.1, step 5).
//
// Used by ws::Client (client.h) on a net::Connector, and by heartwheel-load's
// ws mode on its own sockets. Holds the key, the expected accept and a
// ResponseParser (one allocation) for the handshake only: drop it once
// accepted.
// Errors: feed() says refused with error() (a line for a log: the status
//   and reason, "Sec-WebSocket-Accept does not match", ...) and
//   error_code(): errc::protocol_error for an answer that is not a valid
//   101 (or not HTTP), errc::too_large for a head over max_response_bytes.
// Threads: one connection's.
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/http/response_parser.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::ws {

struct ClientHandshakeOptions {
  std::string path = "/";  // the request target, "/connection/websocket?x=1"
  std::string host;        // the Host header ("example.com:8000"); empty: the caller must give one
  // Offered in Sec-WebSocket-Protocol, in order of preference; empty: none.
  std::vector<std::string> subprotocols;
  // Sent as the Sec-WebSocket-Extensions header, as given; empty: none.
  std::string extensions;
  // Added to the request (Origin, Authorization, Cookie, User-Agent, ...).
  http::Headers headers;
  // The answer's status line and headers at most this long.
  std::size_t max_response_bytes = 16 * 1024;

  // Throws std::invalid_argument naming the bad field (a path not starting
  // with '/', line breaks, an empty host, a subprotocol that is not a token).
  void validate() const;
};

// The upgrade request for `key` (a make_client_key()).
std::string client_request(const ClientHandshakeOptions& options, std::string_view key);

class ClientHandshake {
 public:
  enum class Status : std::uint8_t { need_more, accepted, refused };

  // A fresh key (make_client_key) unless `key` is given (tests, or one key
  // for many connections of a load test: the server cannot tell).
  explicit ClientHandshake(const ClientHandshakeOptions& options, std::string key = {});

  // The request's bytes: send them first.
  const std::string& request() const noexcept { return request_; }
  // The answer's bytes, split anywhere. accepted: the bytes after the head
  // are left in `in`; refused: see error().
  Status feed(std::string_view& in);
  // The connection ended before the answer was complete: refused.
  Status end_of_input();

  int status() const noexcept { return parser_.head().status; }
  const http::ResponseHead& response() const noexcept { return parser_.head(); }
  // The subprotocol the server chose ("" if none) and its extensions header.
  const std::string& subprotocol() const noexcept { return subprotocol_; }
  const std::string& extensions() const noexcept { return extensions_; }
  const std::string& error() const noexcept { return error_; }
  std::error_code error_code() const noexcept { return error_code_; }

 private:
  Status check();
  Status refuse(std::string why);

  const ClientHandshakeOptions* options_;
  std::string request_;
  std::string accept_;  // the Sec-WebSocket-Accept our key asks for
  http::ResponseParser parser_;
  std::string subprotocol_;
  std::string extensions_;
  std::string error_;
  std::error_code error_code_;
  Status status_ = Status::need_more;
};

}  // namespace heartwheel::ws
