// heartwheel/http/response_parser.h - the response side of HTTP/1.1, without
// I/O: bytes in, one response out (llhttp, the same parser the server side
// uses for requests).
//
// What it is
//   A ResponseParser reads the responses of one connection, one at a time:
//   expect() the next one, feed() bytes as they arrive (split anywhere);
//   feed() says when the response is complete and leaves the bytes after it
//   in its input (on a keep-alive connection, nothing should follow: HTTP/1.1
//   without pipelining). Bodies in every framing: Content-Length, chunked
//   (de-chunked here), and "until the connection closes" (end_of_input()
//   completes them at EOF). Informational responses (100 Continue, 103) are
//   skipped. A 101 Switching Protocols ends the HTTP part: feed() says
//   `upgraded` and what followed the head is the new protocol's (ws::Client).
//   A response to HEAD has no body, whatever its headers say (expect(true)).
//
// Limits: the status line and headers together at most max_head_bytes, the
//   body at most max_body_bytes (de-chunked bytes): beyond either, feed()
//   fails with errc::too_large, before the excess is buffered. Bytes that
//   are not HTTP fail with errc::protocol_error (reason() says what llhttp
//   saw).
//
// Cost: one allocation for the parser's state (llhttp's ~80 bytes and the
//   head's strings); the body grows as it arrives (reserved to Content-Length
//   when the server sends one and it is within the limit).
// Threads: one connection's, one thread.
#pragma once

#include <heartwheel/http/message.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::http {

struct ResponseHead {
  int status = 0;
  int version_major = 1;
  int version_minor = 1;
  Headers headers;
  const std::string* header(std::string_view name) const noexcept {
    return find_header(headers, name);
  }
};

class ResponseParser {
 public:
  enum class Status : std::uint8_t {
    need_more,  // the response is not complete yet
    complete,   // head() and body() are the whole response
    upgraded,   // a 101: head() is complete, what followed is the new protocol's
    failed,     // error() says why; the connection cannot be used further
  };

  ResponseParser(std::size_t max_head_bytes, std::size_t max_body_bytes);
  ~ResponseParser();
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  // Expect the next response (to a HEAD request: no body). Clears the last
  // one's head and body.
  void expect(bool head_request = false);
  // Parses from `in`; the bytes used are removed from its front. Returns
  // complete or upgraded with the rest left in `in`, need_more with `in`
  // empty, failed with error() set.
  Status feed(std::string_view& in);
  // The connection ended (EOF): completes a body delimited by the close;
  // failed (errc::closed) if the response was cut short, need_more if none
  // had begun.
  Status end_of_input();

  // True once any byte of the expected response has arrived.
  bool started() const noexcept;
  // After complete: may the connection carry another request (HTTP/1.1
  // without Connection: close, HTTP/1.0 with keep-alive)?
  bool keep_alive() const noexcept;
  const ResponseHead& head() const noexcept;
  ResponseHead& head() noexcept;  // to move the headers out
  std::string& body() noexcept;
  std::error_code error() const noexcept;
  // What llhttp said about bytes it refused (for a log line); "" otherwise.
  std::string_view reason() const noexcept;

  struct State;  // llhttp's and ours (response_parser.cpp)

 private:
  std::unique_ptr<State> s_;
};

}  // namespace heartwheel::http
