// llhttp glue: turns llhttp's callbacks into the session's request events.
//
// The parser pauses (HPE_PAUSED) at the end of every message, so the handler
// is never called from inside llhttp: the parse loop resumes the parser,
// dispatches the complete request, then checks whether it may parse on
// (pipeline depth, drain, Connection: close) before feeding the rest.
#include "parser.h"

#include <heartwheel/http/session.h>

#include "exchange.h"

namespace heartwheel::http::detail {

namespace {

Parser& parser_of(llhttp_t* p) { return *static_cast<Parser*>(p->data); }

int on_message_begin(llhttp_t* p) {
  parser_of(p).begin_request();
  return HPE_OK;
}

// Every byte of the request line and header lines counts against
// max_header_bytes, plus 2 per line / separator (CRLF, ": "), counted once per
// span however many reads the span arrives in (a trickling client must not be
// charged more than a fast one).
int count_header_bytes(llhttp_t* p, std::size_t n, bool new_span, int status = 431) {
  Parser& parser = parser_of(p);
  Exchange& ex = *parser.receiving();
  ex.header_bytes += n + (new_span ? 2 : 0);
  if (ex.header_bytes > parser.max_header_bytes()) {
    parser.error_status = status;
    llhttp_set_error_reason(p, "header too large");
    return HPE_USER;
  }
  return HPE_OK;
}

int on_url(llhttp_t* p, const char* at, std::size_t n) {
  std::string& target = parser_of(p).receiving()->request.target;
  const bool first = target.empty();
  target.append(at, n);
  return count_header_bytes(p, n, first, 414);  // the target alone is too long
}

int on_header_field(llhttp_t* p, const char* at, std::size_t n) {
  Exchange& ex = *parser_of(p).receiving();
  auto& headers = ex.request.headers;
  const bool new_header = headers.empty() || ex.last_was_value;
  if (new_header) headers.emplace_back();
  ex.last_was_value = false;
  headers.back().name.append(at, n);
  return count_header_bytes(p, n, new_header);
}

int on_header_value(llhttp_t* p, const char* at, std::size_t n) {
  Exchange& ex = *parser_of(p).receiving();
  if (ex.request.headers.empty()) ex.request.headers.emplace_back();
  const bool first_piece = !ex.last_was_value;
  ex.last_was_value = true;
  ex.request.headers.back().value.append(at, n);
  return count_header_bytes(p, n, first_piece);
}

int on_headers_complete(llhttp_t* p) { return parser_of(p).headers_complete(); }

int on_body(llhttp_t* p, const char* at, std::size_t n) {
  return parser_of(p).body_piece(std::string_view(at, n));
}

int on_message_complete(llhttp_t* p) {
  parser_of(p).request_complete();
  return HPE_PAUSED;
}

const llhttp_settings_t& settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t st;
    llhttp_settings_init(&st);
    st.on_message_begin = on_message_begin;
    st.on_url = on_url;
    st.on_header_field = on_header_field;
    st.on_header_value = on_header_value;
    st.on_headers_complete = on_headers_complete;
    st.on_body = on_body;
    st.on_message_complete = on_message_complete;
    return st;
  }();
  return s;
}

}  // namespace

Parser::Parser(Session* owner) : session(owner) {
  llhttp_init(&state, HTTP_REQUEST, &settings());
  state.data = this;
}

void Parser::begin_request() { session->begin_request(); }
int Parser::headers_complete() { return session->headers_complete(); }
int Parser::body_piece(std::string_view piece) { return session->body_piece(piece); }
void Parser::request_complete() { session->request_complete(); }
Exchange* Parser::receiving() const noexcept { return session->receiving_.get(); }
std::size_t Parser::max_header_bytes() const noexcept {
  return session->options_->max_header_bytes;
}

}  // namespace heartwheel::http::detail
