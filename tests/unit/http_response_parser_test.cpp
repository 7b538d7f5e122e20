// http::ResponseParser (sans I/O): every framing of a response body, split
// anywhere; what follows a response is left for the caller; informational
// responses skipped; HEAD; the limits, checked before the excess is kept.
#include <heartwheel/common/error.h>
#include <heartwheel/http/response_parser.h>

#include <catch2/catch.hpp>
#include <string>
#include <string_view>

namespace http = heartwheel::http;
using heartwheel::errc;
using Status = http::ResponseParser::Status;

namespace {

// Feeds `bytes` in pieces of `piece` bytes; returns the last status and
// what was left after it.
Status feed_split(http::ResponseParser& p, std::string_view bytes, std::size_t piece,
                  std::string* rest = nullptr) {
  Status s = Status::need_more;
  while (!bytes.empty()) {
    std::string_view in = bytes.substr(0, piece);
    bytes.remove_prefix(in.size());
    s = p.feed(in);
    if (s != Status::need_more) {
      if (rest) *rest = std::string(in) + std::string(bytes);
      return s;
    }
  }
  return s;
}

const std::string kChunked =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
    "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";

}  // namespace

TEST_CASE("A response parser reads Content-Length and chunked bodies split anywhere",
          "[http][response]") {
  const std::string fixed = "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-Y: z\r\n\r\nabcde";
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{7}, fixed.size()}) {
    http::ResponseParser p(1024, 1024);
    p.expect();
    CHECK(feed_split(p, fixed, piece) == Status::complete);
    CHECK(p.head().status == 201);
    CHECK(p.body() == "abcde");
    REQUIRE(p.head().header("x-y"));
    CHECK(*p.head().header("x-y") == "z");
    CHECK(p.keep_alive());

    http::ResponseParser c(1024, 1024);
    c.expect();
    CHECK(feed_split(c, kChunked, piece) == Status::complete);
    CHECK(c.body() == "hello, world");
  }
}

TEST_CASE("A response parser leaves what follows a response and skips 100 Continue",
          "[http][response]") {
  http::ResponseParser p(1024, 1024);
  p.expect();
  std::string rest;
  CHECK(feed_split(p,
                   "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
                   "okEXTRA",
                   1000, &rest) == Status::complete);
  CHECK(p.head().status == 200);
  CHECK(p.body() == "ok");
  CHECK(rest == "EXTRA");
  // The next one on the same connection.
  p.expect();
  CHECK(feed_split(p, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", 5) ==
        Status::complete);
  CHECK(p.head().status == 204);
  CHECK_FALSE(p.keep_alive());
}

TEST_CASE(
    "A response parser completes a close-delimited body at the end of input, and fails a cut one",
    "[http][response]") {
  http::ResponseParser p(1024, 1024);
  p.expect();
  CHECK(feed_split(p, "HTTP/1.1 200 OK\r\n\r\nuntil the end", 4) == Status::need_more);
  CHECK(p.end_of_input() == Status::complete);
  CHECK(p.body() == "until the end");
  CHECK_FALSE(p.keep_alive());

  p.expect();
  CHECK(feed_split(p, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 100) ==
        Status::need_more);
  CHECK(p.end_of_input() == Status::failed);
  CHECK(p.error() == errc::closed);

  p.expect();
  CHECK_FALSE(p.started());
  CHECK(p.end_of_input() == Status::need_more);  // nothing had begun
}

TEST_CASE("A response to HEAD has no body whatever its Content-Length says", "[http][response]") {
  http::ResponseParser p(1024, 1024);
  p.expect(true);
  std::string rest;
  CHECK(feed_split(p, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP/1.1", 1000, &rest) ==
        Status::complete);
  CHECK(p.body().empty());
  CHECK(rest == "HTTP/1.1");
}

TEST_CASE("A response parser refuses a body or head over its limit before keeping it",
          "[http][response]") {
  http::ResponseParser declared(1024, 10);
  declared.expect();
  CHECK(feed_split(declared, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 1000) ==
        Status::failed);
  CHECK(declared.error() == errc::too_large);

  http::ResponseParser chunked(1024, 11);
  chunked.expect();
  CHECK(feed_split(chunked, kChunked, 1000) == Status::failed);  // 12 bytes de-chunked
  CHECK(chunked.error() == errc::too_large);
  CHECK(chunked.body().size() <= 11);

  http::ResponseParser head(64, 1024);
  head.expect();
  CHECK(feed_split(head, "HTTP/1.1 200 OK\r\nX-Long: " + std::string(100, 'x') + "\r\n\r\n", 7) ==
        Status::failed);
  CHECK(head.error() == errc::too_large);
}

TEST_CASE("A 101 ends the HTTP part and leaves the new protocol's bytes", "[http][response]") {
  http::ResponseParser p(1024, 0);
  p.expect();
  std::string rest;
  CHECK(feed_split(p,
                   "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
                   "Upgrade\r\n\r\n\x81\x02hi",
                   9, &rest) == Status::upgraded);
  CHECK(p.head().status == 101);
  CHECK(rest == "\x81\x02hi");
}

TEST_CASE("Bytes that are not an HTTP response fail the parse", "[http][response]") {
  http::ResponseParser p(1024, 1024);
  p.expect();
  CHECK(feed_split(p, "SSH-2.0-OpenSSH\r\n", 1000) == Status::failed);
  CHECK(p.error() == errc::protocol_error);
  CHECK_FALSE(p.reason().empty());
}
