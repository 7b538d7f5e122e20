// llhttp's response side (response_parser.h). The parser pauses at the end
// of every response (HPE_PAUSED), so feed() returns with the bytes after it
// untouched; a 101 stops it for good (HPE_PAUSED_UPGRADE).
#include <heartwheel/common/error.h>
#include <heartwheel/http/response_parser.h>
#include <llhttp.h>

namespace heartwheel::http {

struct ResponseParser::State {
  llhttp_t parser;
  ResponseHead head;
  std::string body;
  std::size_t max_head;
  std::size_t max_body;
  std::size_t head_bytes = 0;
  std::error_code error;
  std::string reason;
  bool head_request = false;
  bool last_was_value = false;
  bool started = false;
  bool complete = false;
  bool keep_alive = false;
};

namespace {

ResponseParser::State& state_of(llhttp_t* p) {
  return *static_cast<ResponseParser::State*>(p->data);
}

// Every byte of the status line and the header lines counts, plus 2 per
// line (its CRLF), counted once per span however many reads bring it.
int count_head(llhttp_t* p, std::size_t n, bool new_span) {
  auto& s = state_of(p);
  s.head_bytes += n + (new_span ? 2 : 0);
  if (s.head_bytes <= s.max_head) return HPE_OK;
  s.error = make_error_code(errc::too_large);
  s.reason = "response head larger than max_head_bytes";
  return HPE_USER;
}

int on_message_begin(llhttp_t* p) {
  auto& s = state_of(p);
  s.started = true;
  s.head = ResponseHead{};
  s.body.clear();
  s.head_bytes = 0;
  s.last_was_value = false;
  return HPE_OK;
}

int on_status(llhttp_t* p, const char* /*at*/, std::size_t n) { return count_head(p, n, false); }

int on_header_field(llhttp_t* p, const char* at, std::size_t n) {
  auto& s = state_of(p);
  const bool new_header = s.head.headers.empty() || s.last_was_value;
  if (new_header) s.head.headers.emplace_back();
  s.last_was_value = false;
  s.head.headers.back().name.append(at, n);
  return count_head(p, n, new_header);
}

int on_header_value(llhttp_t* p, const char* at, std::size_t n) {
  auto& s = state_of(p);
  if (s.head.headers.empty()) s.head.headers.emplace_back();
  s.last_was_value = true;
  s.head.headers.back().value.append(at, n);
  return count_head(p, n, false);
}

int on_headers_complete(llhttp_t* p) {
  auto& s = state_of(p);
  s.head.status = p->status_code;
  s.head.version_major = p->http_major;
  s.head.version_minor = p->http_minor;
  if (p->status_code >= 100 && p->status_code < 200) return HPE_OK;  // skipped, or 101
  // A declared body over the limit fails now, before any of it is read.
  if ((p->flags & F_CONTENT_LENGTH) && p->content_length > s.max_body && !s.head_request) {
    s.error = make_error_code(errc::too_large);
    s.reason = "Content-Length larger than max_body_bytes";
    return -1;
  }
  if ((p->flags & F_CONTENT_LENGTH) && !s.head_request) s.body.reserve(p->content_length);
  return s.head_request ? 1 : HPE_OK;  // 1: no body follows (HEAD)
}

int on_body(llhttp_t* p, const char* at, std::size_t n) {
  auto& s = state_of(p);
  if (s.body.size() + n > s.max_body) {
    s.error = make_error_code(errc::too_large);
    s.reason = "body larger than max_body_bytes";
    return HPE_USER;
  }
  s.body.append(at, n);
  return HPE_OK;
}

int on_message_complete(llhttp_t* p) {
  auto& s = state_of(p);
  const int status = p->status_code;
  if (status >= 100 && status < 200 && status != 101) {  // informational: the real one follows
    s.head = ResponseHead{};
    s.head_bytes = 0;
    return HPE_OK;
  }
  s.complete = true;
  s.keep_alive = llhttp_should_keep_alive(p) != 0;
  return HPE_PAUSED;  // hand it over before parsing on
}

const llhttp_settings_t& settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t x;
    llhttp_settings_init(&x);
    x.on_message_begin = on_message_begin;
    x.on_status = on_status;
    x.on_header_field = on_header_field;
    x.on_header_value = on_header_value;
    x.on_headers_complete = on_headers_complete;
    x.on_body = on_body;
    x.on_message_complete = on_message_complete;
    return x;
  }();
  return s;
}

}  // namespace

ResponseParser::ResponseParser(std::size_t max_head_bytes, std::size_t max_body_bytes)
    : s_(std::make_unique<State>()) {
  s_->max_head = max_head_bytes;
  s_->max_body = max_body_bytes;
  llhttp_init(&s_->parser, HTTP_RESPONSE, &settings());
  s_->parser.data = s_.get();
}

ResponseParser::~ResponseParser() = default;

void ResponseParser::expect(bool head_request) {
  State& s = *s_;
  llhttp_init(&s.parser, HTTP_RESPONSE, &settings());
  s.parser.data = &s;
  s.head = ResponseHead{};
  s.body.clear();
  s.head_bytes = 0;
  s.error.clear();
  s.reason.clear();
  s.head_request = head_request;
  s.started = s.complete = s.keep_alive = false;
}

ResponseParser::Status ResponseParser::feed(std::string_view& in) {
  State& s = *s_;
  if (s.error) return Status::failed;
  if (s.complete) return s.head.status == 101 ? Status::upgraded : Status::complete;
  if (in.empty()) return Status::need_more;
  const llhttp_errno_t rc = llhttp_execute(&s.parser, in.data(), in.size());
  if (rc == HPE_OK) {
    in = {};
    return Status::need_more;
  }
  if (rc == HPE_PAUSED || rc == HPE_PAUSED_UPGRADE) {
    const char* stop = llhttp_get_error_pos(&s.parser);
    in.remove_prefix(static_cast<std::size_t>(stop - in.data()));
    if (rc == HPE_PAUSED_UPGRADE || s.head.status == 101) {
      s.complete = true;
      return Status::upgraded;
    }
    return Status::complete;
  }
  if (!s.error) {
    s.error = make_error_code(errc::protocol_error);
    s.reason = llhttp_get_error_reason(&s.parser) ? llhttp_get_error_reason(&s.parser) : "";
  }
  return Status::failed;
}

ResponseParser::Status ResponseParser::end_of_input() {
  State& s = *s_;
  if (s.error) return Status::failed;
  if (s.complete) return Status::complete;
  if (!s.started) return Status::need_more;
  // A body delimited by the close completes here (on_message_complete).
  const llhttp_errno_t rc = llhttp_finish(&s.parser);
  if ((rc == HPE_OK || rc == HPE_PAUSED) && s.complete) {
    s.keep_alive = false;
    return Status::complete;
  }
  s.error = make_error_code(errc::closed);
  s.reason = "the connection closed before the response was complete";
  return Status::failed;
}

bool ResponseParser::started() const noexcept { return s_->started; }
bool ResponseParser::keep_alive() const noexcept { return s_->keep_alive; }
const ResponseHead& ResponseParser::head() const noexcept { return s_->head; }
ResponseHead& ResponseParser::head() noexcept { return s_->head; }
std::string& ResponseParser::body() noexcept { return s_->body; }
std::error_code ResponseParser::error() const noexcept { return s_->error; }
std::string_view ResponseParser::reason() const noexcept { return s_->reason; }

}  // namespace heartwheel::http
