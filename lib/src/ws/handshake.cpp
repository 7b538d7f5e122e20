// The opening handshake's checks and responses. See heartwheel/ws/handshake.h.
#include <heartwheel/ws/handshake.h>

namespace heartwheel::ws {

namespace {

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls f(element) for each element of every `name` header's comma list;
// stops early when f returns true, and returns whether it did.
template <typename F>
bool any_list_element(const http::Headers& headers, std::string_view name, F f) {
  for (const http::Header& h : headers) {
    if (!http::iequals(h.name, name)) continue;
    std::string_view rest = h.value;
    while (true) {
      const auto comma = rest.find(',');
      const std::string_view element = trim(rest.substr(0, comma));
      if (!element.empty() && f(element)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

std::size_t count_headers(const http::Headers& headers, std::string_view name) noexcept {
  std::size_t n = 0;
  for (const http::Header& h : headers) n += http::iequals(h.name, name) ? 1 : 0;
  return n;
}

HandshakeResult refuse(int status, std::string error, http::Headers headers = {}) {
  HandshakeResult r;
  r.status = status;
  r.error = std::move(error);
  r.headers = std::move(headers);
  return r;
}

std::string_view status_text(int status) noexcept {
  switch (status) {
    case 101:
      return "Switching Protocols";
    case 426:
      return "Upgrade Required";  // not among http::reason_phrase's codes
    default:
      return http::reason_phrase(status);
  }
}

// The server's first preference that the client offered, or "".
std::string select_subprotocol(const http::Request& request,
                               const std::vector<std::string>& server) {
  for (const std::string& mine : server) {
    if (any_list_element(request.headers, "Sec-WebSocket-Protocol",
                         [&](std::string_view theirs) { return theirs == mine; }))
      return mine;
  }
  return {};
}

}  // namespace

bool header_has_token(const http::Headers& headers, std::string_view name,
                      std::string_view token) noexcept {
  return any_list_element(headers, name,
                          [&](std::string_view element) { return http::iequals(element, token); });
}

bool is_websocket_upgrade(const http::Request& request) noexcept {
  return header_has_token(request.headers, "Upgrade", "websocket");
}

HandshakeResult accept_handshake(const http::Request& request, const HandshakeOptions& options) {
  if (request.method != "GET")
    return refuse(405, "WebSocket handshake needs GET, not " + request.method, {{"Allow", "GET"}});
  if (request.version_major < 1 || (request.version_major == 1 && request.version_minor < 1))
    return refuse(400, "WebSocket handshake needs HTTP/1.1 or later");
  if (!request.header("Host")) return refuse(400, "missing Host header");
  if (!is_websocket_upgrade(request)) return refuse(400, "missing Upgrade: websocket");
  if (!header_has_token(request.headers, "Connection", "upgrade"))
    return refuse(400, "missing Connection: Upgrade");

  const std::string* version = request.header("Sec-WebSocket-Version");
  if (!version || trim(*version) != "13")
    return refuse(426, "unsupported Sec-WebSocket-Version (this server speaks 13)",
                  {{"Sec-WebSocket-Version", "13"}});

  if (count_headers(request.headers, "Sec-WebSocket-Key") != 1)
    return refuse(400, "missing or repeated Sec-WebSocket-Key");
  const std::string_view key = trim(*request.header("Sec-WebSocket-Key"));
  if (!is_valid_client_key(key))
    return refuse(400, "Sec-WebSocket-Key is not the base64 of 16 bytes");

  if (options.check_origin) {
    const std::string* origin = request.header("Origin");
    if (!options.check_origin(origin ? std::string_view(*origin) : std::string_view()))
      return refuse(403, "origin not allowed");
  }

  HandshakeResult r;
  r.status = 101;
  r.subprotocol = select_subprotocol(request, options.subprotocols);
  r.headers = {{"Upgrade", "websocket"},
               {"Connection", "Upgrade"},
               {"Sec-WebSocket-Accept", accept_key(key)}};
  if (!r.subprotocol.empty()) r.headers.push_back({"Sec-WebSocket-Protocol", r.subprotocol});
  r.deflate = negotiate_deflate(request.headers, options.deflate);
  if (r.deflate.enabled) r.headers.push_back({"Sec-WebSocket-Extensions", r.deflate.response()});
  return r;
}

std::string HandshakeResult::response_bytes() const {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
  out.append(status_text(status)).append("\r\n");
  for (const http::Header& h : headers)
    out.append(h.name).append(": ").append(h.value).append("\r\n");
  if (!accepted()) {
    const std::string body = error + "\n";
    out.append("Content-Type: text/plain; charset=utf-8\r\nContent-Length: ")
        .append(std::to_string(body.size()))
        .append("\r\nConnection: close\r\n\r\n")
        .append(body);
    return out;
  }
  out.append("\r\n");
  return out;
}

}  // namespace heartwheel::ws
