// Bytes of response heads (private to lib/src/http).
#pragma once

#include <heartwheel/http/session_options.h>

#include <ctime>
#include <string>
#include <string_view>

#include "exchange.h"

namespace heartwheel::http::detail {

inline constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// 1xx, 204 and 304 responses never carry a body.
inline bool status_has_body(int status) noexcept {
  return status >= 200 && status != 204 && status != 304;
}

// Status line, Server, Date, the handler's headers (minus the framing ones the
// session owns), framing (Content-Length or Transfer-Encoding: chunked) and
// Connection, as decided in `ex` (close_after, streaming, chunked). Replaces
// the contents of `out` (its capacity is reused).
void serialize_head(const Exchange& ex, const SessionOptions& options, std::string& out);

// Empty when a handler's status and headers can be written as they are;
// otherwise why not. Refused: a status outside 100..599, a header name that is
// not a token (RFC 9110: empty, or with a space, ':', CR, LF, NUL, ...), a
// value with CR, LF or NUL (response splitting).
std::string check_response(int status, const Headers& headers);

// "Sat, 21 Nov 2026 23:59:14 GMT" for `now` (std::time), formatted at most
// once per second per thread.
std::string_view http_date(std::time_t now);

// Appends one chunk of chunked transfer coding; an empty piece appends nothing
// (an empty chunk would end the body).
void append_chunk(std::string& out, std::string_view piece);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace heartwheel::http::detail
