// The page and the client library, with the headers that keep the page from
// loading or running anything but them (static_files.h).
#include "static_files.h"

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

bool serve_static_file(const http::Request& req, http::Responder& r) {
  const std::string_view path = req.path();
  if (path != "/" && path != "/heartwheel.js") return false;
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
  http::Response page = file_response(kPage, "text/html; charset=utf-8");
  page.headers.push_back({"Content-Security-Policy", page_policy()});
  page.headers.push_back({"X-Frame-Options", "DENY"});
  r.respond(std::move(page));
  return true;
}

}  // namespace chat
