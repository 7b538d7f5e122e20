#include "http_harness.h"

#include <cctype>

namespace http_test {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::size_t need(const std::string& s, const std::string& what, std::size_t from) {
  const auto at = s.find(what, from);
  REQUIRE(at != std::string::npos);
  return at;
}

}  // namespace

std::vector<ParsedResponse> split_responses(const std::string& bytes, bool head_only) {
  std::vector<ParsedResponse> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    ParsedResponse r;
    const std::size_t head_end = need(bytes, "\r\n\r\n", pos);
    const std::string head = bytes.substr(pos, head_end - pos);
    REQUIRE(head.rfind("HTTP/1.1 ", 0) == 0);
    r.status = std::stoi(head.substr(9, 3));
    std::size_t line = head.find("\r\n");
    while (line != std::string::npos) {
      const std::size_t next = head.find("\r\n", line + 2);
      const std::string h =
          head.substr(line + 2, next == std::string::npos ? std::string::npos : next - line - 2);
      const auto colon = h.find(':');
      REQUIRE(colon != std::string::npos);
      r.headers[lower(h.substr(0, colon))] = h.substr(colon + 2);
      line = next;
    }
    pos = head_end + 4;
    const bool no_body = head_only || r.status < 200 || r.status == 204 || r.status == 304;
    if (no_body) {
    } else if (r.has("content-length")) {
      const std::size_t n = std::stoul(r.header("content-length"));
      REQUIRE(pos + n <= bytes.size());
      r.body = bytes.substr(pos, n);
      pos += n;
    } else if (lower(r.header("transfer-encoding")) == "chunked") {
      for (;;) {
        const std::size_t eol = need(bytes, "\r\n", pos);
        const std::size_t n = std::stoul(bytes.substr(pos, eol - pos), nullptr, 16);
        pos = eol + 2;
        if (n == 0) {
          REQUIRE(bytes.compare(pos, 2, "\r\n") == 0);
          pos += 2;
          break;
        }
        REQUIRE(pos + n + 2 <= bytes.size());
        r.body += bytes.substr(pos, n);
        pos += n + 2;
      }
    } else {
      r.body = bytes.substr(pos);
      pos = bytes.size();
    }
    out.push_back(std::move(r));
  }
  return out;
}

Harness::Harness(RefreshMode refresh) : transport(timers, refresh) {
  handler = [this](const Request& req, Responder r) {
    seen.push_back(req.target);
    const auto path = req.path();
    if (path == "/async") {
      held.push_back(std::move(r));
    } else if (path == "/echo") {
      r.respond(200, req.body);
    } else if (path == "/stream") {
      r.begin(200, {{"Content-Type", "text/plain"}});
      r.write("hello ");
      r.write("world");
      r.end();
    } else if (path == "/stream204") {
      r.begin(204);
      r.write("ignored");
      r.end();
    } else if (path == "/stream-drop") {
      r.begin(200);
      r.write("partial");
      // The Responder goes out of scope mid-stream.
    } else if (path == "/throw") {
      throw std::runtime_error("handler bug");
    } else if (path == "/drop") {
      // The Responder goes out of scope unanswered.
    } else {
      r.respond(200, "hello\n");
    }
  };
}

Harness::~Harness() {
  held.clear();
  transport.attach(nullptr);
  session.reset();
}

void Harness::start() {
  session = std::make_unique<Session>(options, handler, transport, stats);
  transport.attach(session.get());
  session->start();
}

}  // namespace http_test
