// permessage-deflate's negotiation: Sec-WebSocket-Extensions parsed as RFC
// 6455 9.1 writes it, a server's answer to the offers (RFC 7692 5, 7.1) and
// a client's check of the answer. See heartwheel/ws/deflate.h.
#include <heartwheel/ws/deflate.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace heartwheel::ws {

namespace {

constexpr std::string_view kHeader = "Sec-WebSocket-Extensions";

struct Param {
  std::string_view name;
  std::string value;  // unquoted
  bool has_value = false;
};

struct Extension {
  std::string_view name;
  std::vector<Param> params;
};

// RFC 7230 tchar.
bool is_tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A cursor over one header value: extension-list = 1#extension,
// extension = token *( ";" param ), param = token [ "=" (token | quoted-string) ],
// optional whitespace around the separators, empty list elements allowed
// (RFC 7230 7's #rule).
class ListParser {
 public:
  explicit ListParser(std::string_view s) : s_(s) {}

  bool parse(std::vector<Extension>& out) {
    for (;;) {
      skip_space();
      if (at_end()) return true;
      if (peek() == ',') {  // an empty element
        ++i_;
        continue;
      }
      Extension e;
      if (!token(e.name)) return false;
      for (;;) {
        skip_space();
        if (at_end() || peek() == ',') break;
        if (peek() != ';') return false;
        ++i_;
        skip_space();
        Param p;
        if (!token(p.name)) return false;
        skip_space();
        if (!at_end() && peek() == '=') {
          ++i_;
          skip_space();
          p.has_value = true;
          if (!value(p.value)) return false;
        }
        e.params.push_back(std::move(p));
      }
      out.push_back(std::move(e));
    }
  }

 private:
  bool at_end() const noexcept { return i_ >= s_.size(); }
  char peek() const noexcept { return s_[i_]; }
  void skip_space() noexcept {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++i_;
  }
  bool token(std::string_view& out) {
    const std::size_t start = i_;
    while (!at_end() && is_tchar(peek())) ++i_;
    out = s_.substr(start, i_ - start);
    return !out.empty();
  }
  bool value(std::string& out) {
    if (at_end()) return false;
    if (peek() != '"') {
      std::string_view t;
      if (!token(t)) return false;
      out.assign(t);
      return true;
    }
    ++i_;  // quoted-string: qdtext and quoted-pairs up to the closing quote
    while (!at_end() && peek() != '"') {
      if (peek() == '\\') {
        if (++i_ >= s_.size()) return false;
      }
      out.push_back(s_[i_++]);
    }
    if (at_end()) return false;
    ++i_;
    // RFC 6455 9.1: a quoted value must be a token once unquoted.
    return !out.empty() && std::all_of(out.begin(), out.end(), is_tchar);
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

// Every element of every Sec-WebSocket-Extensions header, in order; false
// when one does not parse.
bool parse_headers(const http::Headers& headers, std::vector<Extension>& out) {
  for (const http::Header& h : headers)
    if (http::iequals(h.name, kHeader) && !ListParser(h.value).parse(out)) return false;
  return true;
}

// 8..15 as RFC 7692 7.1.2 writes it: decimal, no leading zero.
int window_bits(std::string_view v) noexcept {
  if (v.size() == 1 && v[0] >= '8' && v[0] <= '9') return v[0] - '0';
  if (v.size() == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5') return 10 + (v[1] - '0');
  return 0;
}

// The four parameters of an offer or an answer. `client_window` -1: absent;
// 0: present without a value (allowed in an offer only).
struct Parsed {
  bool server_no_context = false;
  bool client_no_context = false;
  int server_window = 0;
  int client_window = -1;
};

// False when a parameter is unknown, repeated, or has a bad value.
// `bare_client_window`: client_max_window_bits may come without a value
// (in an offer, not in an answer).
bool read_params(const Extension& e, bool bare_client_window, Parsed& p, std::string& why) {
  bool seen[4] = {false, false, false, false};
  for (const Param& param : e.params) {
    int which = -1;
    if (param.name == "server_no_context_takeover") which = 0;
    if (param.name == "client_no_context_takeover") which = 1;
    if (param.name == "server_max_window_bits") which = 2;
    if (param.name == "client_max_window_bits") which = 3;
    if (which < 0) {
      why = "unknown parameter " + std::string(param.name);
      return false;
    }
    if (seen[which]) {
      why = "parameter " + std::string(param.name) + " given twice";
      return false;
    }
    seen[which] = true;
    if (which < 2) {
      if (param.has_value) {
        why = std::string(param.name) + " takes no value";
        return false;
      }
      (which == 0 ? p.server_no_context : p.client_no_context) = true;
      continue;
    }
    const int bits = param.has_value ? window_bits(param.value) : 0;
    if (bits == 0 && (param.has_value || which == 2 || !bare_client_window)) {
      why = std::string(param.name) + " needs a value from 8 to 15";
      return false;
    }
    (which == 2 ? p.server_window : p.client_window) = bits;
  }
  return true;
}

DeflateParams answer(const Parsed& offer, const DeflateOptions& o) {
  DeflateParams p;
  p.enabled = true;
  if (!o.context_takeover) {
    p.server_no_context_takeover = true;
    p.client_no_context_takeover = true;
    p.server_max_window_bits = static_cast<std::uint8_t>(offer.server_window);
    return p;
  }
  const int cap = o.max_window_bits;
  p.server_no_context_takeover = offer.server_no_context;
  // Our stateless side deflates from the loop's pool: no need to cap it.
  if (offer.server_no_context)
    p.server_max_window_bits = static_cast<std::uint8_t>(offer.server_window);
  else
    p.server_max_window_bits = static_cast<std::uint8_t>(
        offer.server_window != 0 ? std::min(offer.server_window, cap) : cap);
  // The client keeps no context (RFC 7692 7.1.1.2 lets a server ask that
  // unasked): its inflate state on our side would be a 32 KiB window per
  // connection, since a smaller one cannot be enforced (zlib resolves a
  // distance past the window from the output of the same call, so a client
  // overstepping its window would be caught or not depending on how its
  // bytes arrive).
  p.client_no_context_takeover = true;
  return p;
}

}  // namespace

void DeflateOptions::validate() const {
  if (level < 1 || level > 9)
    throw std::invalid_argument("ws::DeflateOptions: level must be 1..9, not " +
                                std::to_string(level));
  if (max_window_bits < 9 || max_window_bits > 15)
    throw std::invalid_argument(
        "ws::DeflateOptions: max_window_bits must be 9..15 (zlib cannot deflate with 8), not " +
        std::to_string(max_window_bits));
  if (mem_level < 1 || mem_level > 9)
    throw std::invalid_argument("ws::DeflateOptions: mem_level must be 1..9, not " +
                                std::to_string(mem_level));
  if (inflate_budget == 0)
    throw std::invalid_argument("ws::DeflateOptions: inflate_budget must be > 0");
}

std::string DeflateParams::response() const {
  if (!enabled) return {};
  std::string out(kPermessageDeflate);
  if (server_no_context_takeover) out += "; server_no_context_takeover";
  if (client_no_context_takeover) out += "; client_no_context_takeover";
  if (server_max_window_bits != 0)
    out += "; server_max_window_bits=" + std::to_string(server_max_window_bits);
  if (client_max_window_bits != 0)
    out += "; client_max_window_bits=" + std::to_string(client_max_window_bits);
  return out;
}

DeflateParams negotiate_deflate(const http::Headers& request_headers,
                                const DeflateOptions& options) {
  if (!options.enabled) return {};
  std::vector<Extension> offers;
  if (!parse_headers(request_headers, offers)) return {};
  std::string why;  // a declined offer's reason: not needed by the server
  for (const Extension& e : offers) {
    if (e.name != kPermessageDeflate) continue;
    Parsed offer;
    if (read_params(e, true, offer, why)) return answer(offer, options);
  }
  return {};
}

std::string deflate_offer(const DeflateOptions& options) {
  if (!options.enabled) return {};
  if (options.context_takeover) return std::string(kPermessageDeflate) + "; client_max_window_bits";
  return std::string(kPermessageDeflate) +
         "; server_no_context_takeover; client_no_context_takeover";
}

std::optional<DeflateParams> accept_deflate_response(std::string_view value,
                                                     const DeflateOptions& options,
                                                     std::string& error) {
  std::vector<Extension> list;
  if (!ListParser(value).parse(list)) {
    error = "Sec-WebSocket-Extensions does not parse";
    return std::nullopt;
  }
  if (list.empty()) return DeflateParams{};  // declined
  if (!options.enabled || list.size() != 1 || list[0].name != kPermessageDeflate) {
    error = "the server accepted an extension that was not offered";
    return std::nullopt;
  }
  Parsed p;
  if (!read_params(list[0], false, p, error)) return std::nullopt;
  if (!options.context_takeover && !p.server_no_context) {
    error = "server_no_context_takeover was offered but not accepted";
    return std::nullopt;
  }
  if (p.client_window >= 0 && !options.context_takeover) {
    error = "client_max_window_bits in the answer but not in the offer";
    return std::nullopt;
  }
  DeflateParams out;
  out.enabled = true;
  out.server_no_context_takeover = p.server_no_context;
  // A stateless offer asked for client_no_context_takeover: we keep none.
  out.client_no_context_takeover = p.client_no_context || !options.context_takeover;
  out.server_max_window_bits = static_cast<std::uint8_t>(p.server_window);
  out.client_max_window_bits = static_cast<std::uint8_t>(std::max(p.client_window, 0));
  return out;
}

}  // namespace heartwheel::ws
