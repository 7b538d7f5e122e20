// Request accessors, response helpers and reason phrases.
#include <heartwheel/http/message.h>

#include <stdexcept>

namespace heartwheel::http {

namespace {
char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
}  // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (const char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

bool is_field_text(std::string_view s) noexcept {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

const std::string* find_header(const Headers& headers, std::string_view name) noexcept {
  for (const Header& h : headers)
    if (iequals(h.name, name)) return &h.value;
  return nullptr;
}

std::string_view Request::path() const noexcept {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

std::string_view Request::query() const noexcept {
  std::string_view t = target;
  const auto q = t.find('?');
  return q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
}

std::optional<std::string_view> Request::query_param(std::string_view key) const noexcept {
  std::string_view rest = query();
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
  }
  return std::nullopt;
}

namespace {
int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<std::string> decode_query_component(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      const int hi = hex_value(in[i + 1]);
      const int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> Request::query_value(std::string_view key) const {
  std::string_view rest = query();
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    const std::string_view raw_key = pair.substr(0, eq);
    if (raw_key != key) {
      // Only a key with escapes can decode to `key`.
      if (raw_key.find_first_of("%+") == std::string_view::npos) continue;
      const std::optional<std::string> decoded = decode_query_component(raw_key);
      if (!decoded || *decoded != key) continue;
    }
    const std::string_view raw =
        eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    std::optional<std::string> value = decode_query_component(raw);
    if (!value)
      throw std::invalid_argument("query parameter " + std::string(key) +
                                  ": a '%' not followed by two hex digits");
    return value;
  }
  return std::nullopt;
}

Response Response::text(int status, std::string body, std::string_view content_type) {
  Response r;
  r.status = status;
  r.headers.push_back({"Content-Type", std::string(content_type)});
  r.body = std::move(body);
  return r;
}

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

}  // namespace heartwheel::http
