// The files heartwheel-chat serves from its own binary: the chat page at
// `/` and the client library it imports at `/heartwheel.js`. Both are
// embedded at build time by embed_page.py from their one source
// (chat.html here, clients/js/heartwheel.js), so the page and the library
// a program serves always match the build.
//
// Loop thread of the worker that took the request; no state, no allocation
// beyond the response's copy of the file.
#pragma once

#include <string_view>

#include <heartwheel/http/message.h>
#include <heartwheel/http/responder.h>

namespace chat {

// chat.html, and the CSP sources ('sha256-...') of its inline scripts.
extern const std::string_view kPage;
extern const std::string_view kPageScriptHashes;
// clients/js/heartwheel.js, an ES module.
extern const std::string_view kClientLibrary;

// Answers GET or HEAD of `/` or `/heartwheel.js` (405 with Allow for another
// method) and returns true; returns false, leaving `r` untouched, for any
// other path.
bool serve_static_file(const heartwheel::http::Request& req, heartwheel::http::Responder& r);

}  // namespace chat
