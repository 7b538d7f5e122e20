// The page and the client library, with the headers that keep the page from
// loading or running anything but them (static_files.h).
#include "static_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace chat {

namespace http = heartwheel::http;

namespace {

// The page may run its own inline module (by hash, computed at build time)
// and what it imports from here (script-src 'self': /heartwheel.js); nothing
// else loads, it connects only back here (ws: / wss: of this origin), never
// in a frame (clickjacking).
std::string page_policy() {
  return "default-src 'none'; script-src 'self' " + std::string(kPageScriptHashes) +
         "; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action "
         "'none'; frame-ancestors 'none'";
}

http::Response file_response(std::string_view body, std::string_view content_type) {
  http::Response response = http::Response::text(200, std::string(body), content_type);
  // A new build serves new files at the same names: revalidate every time.
  response.headers.push_back({"Cache-Control", "no-cache"});
  // A module is refused unless its Content-Type says JavaScript: no sniffing.
  response.headers.push_back({"X-Content-Type-Options", "nosniff"});
  return response;
}

}  // namespace

bool serve_static_file(const http::Request& req, http::Responder& r,
                       const std::string* centrifuge_js) {
  const std::string_view path = req.path();
  if (path != "/" && path != "/heartwheel.js" && path != "/centrifuge.js") return false;
  if (req.method != "GET" && req.method != "HEAD") {
    http::Response refusal = http::Response::text(405, "Method Not Allowed\n");
    refusal.headers.push_back({"Allow", "GET, HEAD"});
    r.respond(std::move(refusal));
    return true;
  }
  if (path == "/heartwheel.js") {
    r.respond(file_response(kClientLibrary, "text/javascript; charset=utf-8"));
    return true;
  }
  if (path == "/centrifuge.js") {
    if (centrifuge_js == nullptr) {
      r.respond(404,
                "this server serves no /centrifuge.js: start it with --centrifuge-js FILE (npm "
                "centrifuge's dist/centrifuge.js) for the page's Centrifugo mode\n");
      return true;
    }
    r.respond(file_response(*centrifuge_js, "text/javascript; charset=utf-8"));
    return true;
  }
  http::Response page = file_response(kPage, "text/html; charset=utf-8");
  page.headers.push_back({"Content-Security-Policy", page_policy()});
  page.headers.push_back({"X-Frame-Options", "DENY"});
  r.respond(std::move(page));
  return true;
}

std::shared_ptr<const std::string> load_centrifuge_js(const std::string& path) {
  // The SDK's browser build is about 100 KB; anything this large is not it.
  constexpr std::size_t kMaxBytes = std::size_t{4} << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument("--centrifuge-js: cannot read " + path + ": " +
                                std::strerror(errno));
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxBytes)
      throw std::invalid_argument("--centrifuge-js: " + path +
                                  " is over 4 MiB: not npm centrifuge's dist/centrifuge.js");
  }
  if (in.bad())
    throw std::invalid_argument("--centrifuge-js: cannot read " + path + ": " +
                                std::strerror(errno));
  if (text.empty()) throw std::invalid_argument("--centrifuge-js: " + path + " is empty");
  // The browser build defines globalThis.Centrifuge: a file that never
  // names it is some other file given by mistake.
  if (text.find("Centrifuge") == std::string::npos)
    throw std::invalid_argument("--centrifuge-js: " + path +
                                " is not npm centrifuge's browser build (dist/centrifuge.js): it "
                                "never mentions Centrifuge");
  return std::make_shared<const std::string>(std::move(text));
}

}  // namespace chat
