// The files heartwheel-chat serves from its own binary: the chat page at
// `/` and the client library it imports at `/heartwheel.js`. Both are
// embedded at build time by embed_page.py from their one source
// (chat.html here, clients/js/heartwheel.js), so the page and the library
// a program serves always match the build. And, when the operator gives
// one (--centrifuge-js FILE), npm `centrifuge`'s browser build at
// `/centrifuge.js` for the page's Centrifugo mode: read once at startup,
// never embedded (the build needs no npm).
//
// Loop thread of the worker that took the request; no state, no allocation
// beyond the response's copy of the file. load_centrifuge_js: main() only.
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/http/responder.h>

#include <memory>
#include <string>
#include <string_view>

namespace chat {

// chat.html, and the CSP sources ('sha256-...') of its inline scripts.
extern const std::string_view kPage;
extern const std::string_view kPageScriptHashes;
// clients/js/heartwheel.js, an ES module.
extern const std::string_view kClientLibrary;

// Answers GET or HEAD of `/`, `/heartwheel.js` or `/centrifuge.js` (405 with
// Allow for another method) and returns true; returns false, leaving `r`
// untouched, for any other path. `/centrifuge.js` is `centrifuge_js`, or a
// 404 saying which flag serves it when that is null.
bool serve_static_file(const heartwheel::http::Request& req, heartwheel::http::Responder& r,
                       const std::string* centrifuge_js = nullptr);

// --centrifuge-js FILE: npm centrifuge's browser build (dist/centrifuge.js),
// read whole. Throws std::invalid_argument naming the flag when the file
// cannot be read, is empty, is over 4 MiB, or is not that build (it never
// mentions `Centrifuge`).
std::shared_ptr<const std::string> load_centrifuge_js(const std::string& path);

}  // namespace chat
