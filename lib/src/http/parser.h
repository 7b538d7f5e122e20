// The llhttp parser of one session (private to lib/src/http). Kept out of the
// public headers so that users of heartwheel need not see <llhttp.h>.
#pragma once

#include <cstddef>
#include <string_view>

#include <llhttp.h>

namespace heartwheel::http {
class Session;
}

namespace heartwheel::http::detail {

struct Exchange;

struct Parser {
  explicit Parser(Session* owner);

  // Forwarders into the session (which befriends Parser).
  void begin_request();
  int headers_complete();
  int body_piece(std::string_view piece);
  void request_complete();
  Exchange* receiving() const noexcept;
  std::size_t max_header_bytes() const noexcept;

  Session* session;
  llhttp_t state;
  int error_status = 0;  // status a callback chose when it failed the parse (413, 417, 431)
};

}  // namespace heartwheel::http::detail
