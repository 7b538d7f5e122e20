// Response heads. The session owns the framing headers, so a handler cannot
// produce a response whose length disagrees with its body (a classic source
// of desynchronised keep-alive connections).
#include "serialize.h"

#include <algorithm>
#include <charconv>
#include <ctime>

namespace heartwheel::http::detail {

namespace {

bool is_framing_header(std::string_view name) noexcept {
  return iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") ||
         iequals(name, "Connection");
}

// RFC 9110 tchar.
bool is_token_char(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void append_number(std::string& out, std::size_t n, int base = 10) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, n, base);
  out.append(buf, r.ptr);
}

}  // namespace

std::string_view http_date() {
  thread_local std::time_t cached_second = 0;
  thread_local char buf[40];
  thread_local std::size_t len = 0;
  const std::time_t t = std::time(nullptr);
  if (t != cached_second) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    len = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second = t;
  }
  return {buf, len};
}

void serialize_head(const Exchange& ex, const SessionOptions& options, std::string& h) {
  h.clear();
  h += "HTTP/1.1 ";
  append_number(h, static_cast<std::size_t>(ex.status));
  h += ' ';
  h += reason_phrase(ex.status);
  h += "\r\n";
  if (!options.server_name.empty()) {
    h += "Server: ";
    h += options.server_name;
    h += "\r\n";
  }
  h += "Date: ";
  h += http_date();
  h += "\r\n";
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
  if (ex.close_after) {
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
    if (h.name.empty() || !std::all_of(h.name.begin(), h.name.end(), is_token_char))
      return "header #" + std::to_string(i + 1) +
             ": the name is empty or not a token (letters, digits, !#$%&'*+-.^_`|~)";
    if (h.value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
      return "header '" + h.name + "': the value contains CR, LF or NUL";
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
