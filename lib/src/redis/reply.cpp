// Reply construction, RESP encoding and the debug rendering (reply.h).
#include <heartwheel/redis/reply.h>

#include <cstdio>

namespace heartwheel::redis {

const char* to_string(ReplyType type) noexcept {
  switch (type) {
    case ReplyType::nil:
      return "nil";
    case ReplyType::status:
      return "status";
    case ReplyType::error:
      return "error";
    case ReplyType::integer:
      return "integer";
    case ReplyType::string:
      return "string";
    case ReplyType::array:
      return "array";
  }
  return "unknown";
}

Reply Reply::status(std::string text) {
  Reply r;
  r.type_ = ReplyType::status;
  r.str_ = std::move(text);
  return r;
}

Reply Reply::error(std::string text) {
  Reply r;
  r.type_ = ReplyType::error;
  r.str_ = std::move(text);
  return r;
}

Reply Reply::integer(std::int64_t value) {
  Reply r;
  r.type_ = ReplyType::integer;
  r.integer_ = value;
  return r;
}

Reply Reply::string(std::string bytes) {
  Reply r;
  r.type_ = ReplyType::string;
  r.str_ = std::move(bytes);
  return r;
}

Reply Reply::array(std::vector<Reply> elements) {
  Reply r;
  r.type_ = ReplyType::array;
  r.elements_ = std::move(elements);
  return r;
}

bool Reply::is(std::string_view text) const noexcept {
  if (str_.size() != text.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(str_[i]) != lower(text[i])) return false;
  }
  return true;
}

namespace {

void encode_into(std::string& out, const Reply& r) {
  switch (r.type()) {
    case ReplyType::nil:
      out += "$-1\r\n";
      return;
    case ReplyType::status:
    case ReplyType::error:
      out += r.type() == ReplyType::status ? '+' : '-';
      out += r.str();
      out += "\r\n";
      return;
    case ReplyType::integer:
      out += ':';
      out += std::to_string(r.integer());
      out += "\r\n";
      return;
    case ReplyType::string:
      out += '$';
      out += std::to_string(r.str().size());
      out += "\r\n";
      out += r.str();
      out += "\r\n";
      return;
    case ReplyType::array:
      out += '*';
      out += std::to_string(r.size());
      out += "\r\n";
      for (const Reply& e : r.elements()) encode_into(out, e);
      return;
  }
}

void quote_into(std::string& out, std::string_view bytes) {
  out += '"';
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    }
  }
  out += '"';
}

void debug_into(std::string& out, const Reply& r) {
  switch (r.type()) {
    case ReplyType::nil:
      out += "nil";
      return;
    case ReplyType::status:
      out += '+';
      out += r.str();
      return;
    case ReplyType::error:
      out += '-';
      out += r.str();
      return;
    case ReplyType::integer:
      out += '(' + std::to_string(r.integer()) + ')';
      return;
    case ReplyType::string:
      quote_into(out, r.str());
      return;
    case ReplyType::array:
      out += '[';
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (i) out += ", ";
        debug_into(out, r[i]);
      }
      out += ']';
      return;
  }
}

}  // namespace

std::string encode(const Reply& reply) {
  std::string out;
  encode_into(out, reply);
  return out;
}

std::string to_debug_string(const Reply& reply) {
  std::string out;
  debug_into(out, reply);
  return out;
}

}  // namespace heartwheel::redis
