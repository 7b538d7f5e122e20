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

// One key or value of a query string, decoded as browsers encode it
// (application/x-www-form-urlencoded, URLSearchParams): "%XY" is the byte
// 0xXY (hex digits of either case), '+' a space, every other byte itself.
// nullopt when a '%' is not followed by two hex digits. O(size).
std::optional<std::string> decode_query_component(std::string_view in);

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
  // Value of `key` in the query string as sent (no percent-decoding),
  // nullopt if absent. For values that are never encoded (numbers).
  std::optional<std::string_view> query_param(std::string_view key) const noexcept;
  // Value of `key` in the query string, decoded (decode_query_component:
  // "channel=private%3Aceo" is "private:ceo"; keys are compared decoded
  // too), nullopt if absent. The first of repeated keys wins. Throws
  // std::invalid_argument naming the key when the value's (or a key's)
  // escapes are malformed. The result may hold any byte: check it.
  std::optional<std::string> query_value(std::string_view key) const;
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
