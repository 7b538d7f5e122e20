// The Origin check for browser handshakes (origin_policy.h).
#include <heartwheel/auth/origin_policy.h>

#include <stdexcept>

namespace heartwheel::auth {

namespace {

char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_ci(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

int default_port(std::string_view scheme) noexcept {
  if (equal_ci(scheme, "http") || equal_ci(scheme, "ws")) return 80;
  if (equal_ci(scheme, "https") || equal_ci(scheme, "wss")) return 443;
  return 0;
}

bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// A port: 1 to 5 digits, 1-65535. -1 if not.
int parse_port(std::string_view s) noexcept {
  if (s.empty() || s.size() > 5) return -1;
  int port = 0;
  for (const char c : s) {
    if (!is_digit(c)) return -1;
    port = port * 10 + (c - '0');
  }
  return port >= 1 && port <= 65535 ? port : -1;
}

// A host as an origin serializes it: a DNS name or IPv4 address (labels of
// letters, digits, '-' and '_', none empty) or a bracketed IPv6 literal.
bool valid_host(std::string_view host) noexcept {
  if (host.empty()) return false;
  if (host.front() == '[') {
    if (host.size() < 4 || host.back() != ']') return false;
    for (const char c : host.substr(1, host.size() - 2))
      if (!is_digit(c) && !(lower(c) >= 'a' && lower(c) <= 'f') && c != ':' && c != '.')
        return false;
    return true;
  }
  char previous = '.';
  for (const char c : host) {
    if (c == '.') {
      if (previous == '.') return false;  // an empty label
    } else if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '_') {
      return false;
    }
    previous = c;
  }
  return previous != '.';
}

struct Authority {
  std::string_view host;
  int port = -1;  // -1: none written
};

// host[:port] with host possibly a bracketed IPv6 literal; false if not.
bool split_authority(std::string_view text, Authority& out) noexcept {
  std::size_t host_end = text.size();
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return false;
    host_end = close + 1;
  } else {
    host_end = text.rfind(':');
    if (host_end == std::string_view::npos) host_end = text.size();
  }
  out.host = text.substr(0, host_end);
  out.port = -1;
  if (host_end < text.size()) {
    if (text[host_end] != ':') return false;
    out.port = parse_port(text.substr(host_end + 1));
    if (out.port < 0) return false;
  }
  return true;
}

struct Origin {
  std::string_view scheme;
  Authority authority;
};

// "scheme://host[:port]" and nothing else (an origin has no path, query or
// user info). False if `text` is not one.
bool parse_origin(std::string_view text, Origin& out) noexcept {
  const std::size_t sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  out.scheme = text.substr(0, sep);
  if (!is_alpha(out.scheme.front())) return false;
  for (const char c : out.scheme)
    if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.') return false;
  return split_authority(text.substr(sep + 3), out.authority);
}

int effective_port(const Authority& a, std::string_view scheme) noexcept {
  return a.port >= 0 ? a.port : default_port(scheme);
}

bool ends_with_ci(std::string_view s, std::string_view suffix) noexcept {
  return s.size() >= suffix.size() && equal_ci(s.substr(s.size() - suffix.size()), suffix);
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

OriginPolicy OriginPolicy::same_host() {
  OriginPolicy p;
  p.mode_ = Mode::same_host;
  return p;
}

OriginPolicy OriginPolicy::from_patterns(const std::vector<std::string>& patterns) {
  if (patterns.empty())
    throw std::invalid_argument("allowed origins: the list is empty (give \"*\" for any origin)");
  OriginPolicy p;
  p.mode_ = Mode::patterns;
  for (const std::string& text : patterns) {
    if (text == "*") return any_origin();
    const auto bad = [&](std::string_view why) {
      throw std::invalid_argument("allowed origin \"" + text + "\": " + std::string(why));
    };
    Origin o;
    if (text.find('/', text.find("://") == std::string::npos ? 0 : text.find("://") + 3) !=
        std::string::npos)
      bad("an origin has no path; write it as scheme://host[:port], e.g. https://example.com");
    if (!parse_origin(text, o))
      bad("not of the form scheme://host[:port] (e.g. https://chat.example.com, "
          "https://*.example.com, http://localhost:8080) or \"*\"");
    Pattern pattern;
    pattern.scheme = to_lower(o.scheme);
    std::string_view host = o.authority.host;
    if (host.substr(0, 2) == "*.") {
      pattern.wildcard = true;
      host.remove_prefix(1);  // keep the dot: ".example.com"
      if (host.size() < 2 || host[1] == '[' || !valid_host(host.substr(1)))
        bad("the host after \"*.\" is not a host name");
    } else if (!valid_host(host)) {
      bad(host.find('*') != std::string_view::npos
              ? "'*' may only stand for whole leading labels (https://*.example.com) or be the "
                "whole pattern"
              : "the host is not a host name, IPv4 address or bracketed IPv6 address");
    }
    pattern.host = to_lower(host);
    pattern.port = effective_port(o.authority, pattern.scheme);
    p.patterns_.push_back(std::move(pattern));
  }
  return p;
}

OriginPolicy OriginPolicy::for_server(const std::vector<std::string>& patterns,
                                      bool token_key_set) {
  if (!patterns.empty()) return from_patterns(patterns);
  return token_key_set ? same_host() : any_origin();
}

bool OriginPolicy::allows(std::string_view origin_text, std::string_view host_text) const noexcept {
  origin_text = trim(origin_text);
  if (origin_text.empty()) return true;  // not a browser
  if (mode_ == Mode::any) return true;
  Origin origin;
  if (!parse_origin(origin_text, origin) || !valid_host(origin.authority.host)) return false;
  const int port = effective_port(origin.authority, origin.scheme);

  if (mode_ == Mode::same_host) {
    Authority host;
    if (!split_authority(trim(host_text), host) || !valid_host(host.host)) return false;
    // The request's scheme is not in the Host header: a missing port there
    // means the origin scheme's default.
    return equal_ci(origin.authority.host, host.host) &&
           port == effective_port(host, origin.scheme);
  }

  for (const Pattern& p : patterns_) {
    if (p.port != port || !equal_ci(p.scheme, origin.scheme)) continue;
    if (p.wildcard) {
      // ".example.com" with at least one label before it.
      if (origin.authority.host.size() > p.host.size() &&
          ends_with_ci(origin.authority.host, p.host))
        return true;
    } else if (equal_ci(p.host, origin.authority.host)) {
      return true;
    }
  }
  return false;
}

}  // namespace heartwheel::auth
