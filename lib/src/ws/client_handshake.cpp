// The client side of the opening handshake (client_handshake.h).
#include <heartwheel/common/error.h>
#include <heartwheel/ws/client_handshake.h>
#include <heartwheel/ws/handshake.h>

#include <stdexcept>

namespace heartwheel::ws {

void ClientHandshakeOptions::validate() const {
  if (path.empty() || path[0] != '/' || !http::is_field_text(path) ||
      path.find(' ') != std::string::npos)
    throw std::invalid_argument("ws client: path '" + path +
                                "' must start with '/', without spaces");
  if (host.empty() || !http::is_field_text(host))
    throw std::invalid_argument("ws client: the Host header needs a value without line breaks");
  for (const std::string& p : subprotocols)
    if (!http::is_token(p))
      throw std::invalid_argument("ws client: subprotocol '" + p + "' is not a token");
  if (!http::is_field_text(extensions))
    throw std::invalid_argument("ws client: extensions has a line break");
  for (const http::Header& h : headers)
    if (!http::is_token(h.name) || !http::is_field_text(h.value))
      throw std::invalid_argument("ws client: header '" + h.name + "' is not a valid header");
  if (max_response_bytes < 128)
    throw std::invalid_argument("ws client: max_response_bytes must be at least 128");
}

std::string client_request(const ClientHandshakeOptions& o, std::string_view key) {
  std::string r;
  r.reserve(192 + o.path.size() + o.host.size());
  r.append("GET ").append(o.path).append(" HTTP/1.1\r\nHost: ").append(o.host);
  r.append("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ");
  r.append(key).append("\r\nSec-WebSocket-Version: 13\r\n");
  if (!o.subprotocols.empty()) {
    r.append("Sec-WebSocket-Protocol: ");
    for (std::size_t i = 0; i < o.subprotocols.size(); ++i)
      r.append(i ? ", " : "").append(o.subprotocols[i]);
    r.append("\r\n");
  }
  if (!o.extensions.empty())
    r.append("Sec-WebSocket-Extensions: ").append(o.extensions).append("\r\n");
  for (const http::Header& h : o.headers)
    r.append(h.name).append(": ").append(h.value).append("\r\n");
  r.append("\r\n");
  return r;
}

ClientHandshake::ClientHandshake(const ClientHandshakeOptions& options, std::string key)
    : options_(&options), parser_(options.max_response_bytes, 0) {
  if (key.empty()) key = make_client_key();
  request_ = client_request(options, key);
  accept_ = accept_key(key);
  parser_.expect(false);
}

ClientHandshake::Status ClientHandshake::refuse(std::string why) {
  status_ = Status::refused;
  error_ = std::move(why);
  if (!error_code_) error_code_ = make_error_code(errc::protocol_error);
  return status_;
}

ClientHandshake::Status ClientHandshake::feed(std::string_view& in) {
  if (status_ != Status::need_more) return status_;
  switch (parser_.feed(in)) {
    case http::ResponseParser::Status::need_more:
      return status_;
    case http::ResponseParser::Status::upgraded:
      return check();
    case http::ResponseParser::Status::complete:  // an answer that is not a 101 (a body of 0 bytes)
      return refuse("the server answered " + std::to_string(parser_.head().status) +
                    " instead of 101 Switching Protocols");
    case http::ResponseParser::Status::failed:
      error_code_ = parser_.error();
      if (parser_.error() == errc::too_large) {
        // A refusal with a body (403 with a text) passes the body limit of
        // 0: report the status, which is what matters.
        if (parser_.head().status != 0 && parser_.head().status != 101) {
          error_code_ = make_error_code(errc::protocol_error);
          return refuse("the server answered " + std::to_string(parser_.head().status) +
                        " instead of 101 Switching Protocols");
        }
        return refuse("the server's answer is longer than max_response_bytes");
      }
      return refuse("the server's answer is not HTTP: " + std::string(parser_.reason()));
  }
  return status_;
}

ClientHandshake::Status ClientHandshake::end_of_input() {
  if (status_ != Status::need_more) return status_;
  error_code_ = make_error_code(errc::closed);
  return refuse("the connection closed before the handshake's answer");
}

ClientHandshake::Status ClientHandshake::check() {
  const http::ResponseHead& h = parser_.head();
  if (h.status != 101)
    return refuse("the server answered " + std::to_string(h.status) +
                  " instead of 101 Switching Protocols");
  if (!header_has_token(h.headers, "Upgrade", "websocket"))
    return refuse("the 101 has no Upgrade: websocket");
  if (!header_has_token(h.headers, "Connection", "upgrade"))
    return refuse("the 101 has no Connection: upgrade");
  const std::string* accept = h.header("Sec-WebSocket-Accept");
  if (!accept || *accept != accept_) return refuse("Sec-WebSocket-Accept does not match our key");
  if (const std::string* p = h.header("Sec-WebSocket-Protocol")) {
    bool offered = false;
    for (const std::string& o : options_->subprotocols) offered = offered || o == *p;
    if (!offered)
      return refuse("the server chose subprotocol '" + *p + "', which we did not offer");
    subprotocol_ = *p;
  }
  if (const std::string* e = h.header("Sec-WebSocket-Extensions"); e && !e->empty()) {
    if (options_->extensions.empty())
      return refuse("the server answered with extensions '" + *e + "' we did not ask for");
    extensions_ = *e;
  }
  status_ = Status::accepted;
  return status_;
}

}  // namespace heartwheel::ws
