// Response heads. The session owns the framing headers, so a handler cannot
// produce a response whose length disagrees with its body (a classic source
// of desynchronised keep-alive connections).
#include "serialize.h"

#include <array>
#include <charconv>
#include <cstring>
#include <ctime>

namespace heartwheel::http::detail {

namespace {

bool is_framing_header(std::string_view name) noexcept {
  return iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") ||
         iequals(name, "Connection");
}

// RFC 9110 tchar, as a table: one load per byte of a header name.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();
bool is_token(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char c : name)
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  return true;
}

// CR, LF or NUL: bytes that end a header line early (response splitting).
// strcspn stops at the first CR or LF, or at a NUL (its terminator): one
// vectorised pass in glibc (find_first_of would call memchr per byte).
bool splits_lines(const std::string& value) noexcept {
  return std::strcspn(value.c_str(), "\r\n") != value.size();
}

void append_number(std::string& out, std::size_t n, int base = 10) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, n, base);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

}  // namespace

std::string_view http_date(std::time_t t) {
  thread_local std::time_t cached_second = 0;
  thread_local char buf[40];
  thread_local std::size_t len = 0;
  if (t != cached_second) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    len = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second = t;
  }
  return {buf, len};
}

namespace {

// The status line, Server and Date of the last head this thread wrote: on a
// keep-alive path they repeat for every response of a second, so they are
// one copy instead of a dozen appends (and a date check) per response.
struct HeadStart {
  int status = 0;
  std::time_t second = -1;
  std::string server;
  std::string bytes;
};

const std::string& head_start(int status, std::string_view server) {
  thread_local HeadStart cached;
  const std::time_t t = std::time(nullptr);
  if (cached.status == status && cached.second == t && cached.server == server)
    return cached.bytes;
  std::string& h = cached.bytes;
  h.clear();
  h += "HTTP/1.1 ";
  append_number(h, static_cast<std::size_t>(status));
  h += ' ';
  h += reason_phrase(status);
  h += "\r\n";
  if (!server.empty()) {
    h += "Server: ";
    h += server;
    h += "\r\n";
  }
  h += "Date: ";
  h += http_date(t);
  h += "\r\n";
  cached.status = status;
  cached.second = t;
  cached.server.assign(server);
  return h;
}

}  // namespace

void serialize_head(const Exchange& ex, const SessionOptions& options, std::string& h) {
  h = head_start(ex.status, options.server_name);
  for (const Header& header : ex.headers) {
    if (is_framing_header(header.name)) continue;
    h += header.name;
    h += ": ";
    h += header.value;
    h += "\r\n";
  }
  if (ex.streaming) {
    if (ex.chunked && status_has_body(ex.status)) h += "Transfer-Encoding: chunked\r\n";
  } else if (status_has_body(ex.status)) {
    h += "Content-Length: ";
    append_number(h, ex.content_length);
    h += "\r\n";
  }
  if (ex.switching()) {
    h += "Connection: Upgrade\r\n";  // 101: the handler's Upgrade header says to what
  } else if (ex.close_after) {
    h += "Connection: close\r\n";
  } else if (ex.request.version_major == 1 && ex.request.version_minor == 0) {
    h += "Connection: keep-alive\r\n";  // HTTP/1.0 keeps alive only when told so
  }
  h += "\r\n";
}

std::string check_response(int status, const Headers& headers) {
  if (status < 100 || status > 599)
    return "status " + std::to_string(status) + " is not a code in 100..599";
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const Header& h = headers[i];
    // The bad bytes themselves are left out of the message: it may be logged.
    if (!is_token(h.name))
      return "header #" + std::to_string(i + 1) +
             ": the name is empty or not a token (letters, digits, !#$%&'*+-.^_`|~)";
    if (splits_lines(h.value)) return "header '" + h.name + "': the value contains CR, LF or NUL";
  }
  return {};
}

void append_chunk(std::string& out, std::string_view piece) {
  if (piece.empty()) return;
  append_number(out, piece.size(), 16);
  out += "\r\n";
  out += piece;
  out += "\r\n";
}

}  // namespace heartwheel::http::detail
