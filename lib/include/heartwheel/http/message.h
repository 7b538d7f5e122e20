// heartwheel/http/message.h - the request a handler sees and the response it gives.
//
// Plain value types: a Request is filled by the session's parser and owned by
// the exchange it belongs to; it stays valid as long as the handler's
// Responder (or the session) holds that exchange. A Response is built by the
// handler and moved into the session; the session owns the framing headers
// (Content-Length, Transfer-Encoding, Connection) and drops any copies of them
// a handler sets.
// Threads: values; no shared state.
#pragma once

#include <heartwheel/common/time.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::http {

struct Header {
  std::string name;
  std::string value;
};
using Headers = std::vector<Header>;

// Case-insensitive ASCII comparison, as header names and tokens require.
bool iequals(std::string_view a, std::string_view b) noexcept;

// RFC 9110's token (tchar+): what a method, a header name or a WebSocket
// subprotocol may be made of. Empty is not a token.
bool is_token(std::string_view s) noexcept;
// No CR, LF or NUL: a value a caller gives cannot start a header of its own.
bool is_field_text(std::string_view s) noexcept;

// The first header called `name` (case-insensitive), or nullptr. O(headers).
const std::string* find_header(const Headers& headers, std::string_view name) noexcept;

struct Request {
  std::string method;  // "GET", "POST", ... as sent
  std::string target;  // request-target as sent: "/delay?ms=20"
  int version_major = 1;
  int version_minor = 1;
  Headers headers;
  std::string body;        // de-chunked, at most SessionOptions::max_body_bytes
  bool keep_alive = true;  // the client's wish (HTTP/1.0 and Connection rules applied)
  TimePoint started{};     // when the first byte of the request arrived
  TimePoint deadline = kNever;  // started + request timeout; kNever when off

  std::string_view path() const noexcept;   // target up to '?'
  std::string_view query() const noexcept;  // after '?', or empty
  // Value of `key` in the query string (no percent-decoding), nullopt if absent.
  std::optional<std::string_view> query_param(std::string_view key) const noexcept;
  const std::string* header(std::string_view name) const noexcept {
    return find_header(headers, name);
  }
};

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  // When set, the body is this immutable buffer instead of `body` (which
  // must then be empty): sent by reference, never copied, also while a slow
  // peer reads it, so N connections getting one buffer hold one copy between
  // them (as a server sends a file from the page cache). For content many
  // clients get: a static asset, a cached answer. Must not change once set.
  std::shared_ptr<const std::string> shared_body{};  // {}: aggregates may omit it

  // The body's size, whichever holds it.
  std::size_t body_size() const noexcept { return shared_body ? shared_body->size() : body.size(); }

  // A response with `body` and a Content-Type header.
  static Response text(int status, std::string body,
                       std::string_view content_type = "text/plain; charset=utf-8");
};

// "OK", "Not Found", ...; "Unknown" for codes this library does not name.
std::string_view reason_phrase(int status) noexcept;

}  // namespace heartwheel::http
