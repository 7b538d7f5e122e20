// heartwheel/auth/origin_policy.h - which web pages may open a WebSocket (or
// an EventSource) to the server: the Origin check against cross-site
// WebSocket hijacking.
//
// A browser sends the page's origin ("https://chat.example.com") with every
// WebSocket handshake and cookies with it, so without this check any page a
// user visits can act as that user. The contract (--allowed-origin PATTERN,
// repeatable):
//   "*"                          any origin
//   "https://chat.example.com"   that scheme, host and port exactly (the
//                                scheme's default port when none is written:
//                                http/ws 80, https/wss 443)
//   "https://*.example.com"      any subdomain of example.com, at any depth
//                                ("https://a.b.example.com"), not
//                                example.com itself
//   "http://localhost:8080"      with a port
//   Scheme and host compare ASCII case-insensitively.
// Without patterns: any origin when no token key is set (the server is open
// anyway), same-host only when one is: the Origin's host[:port] must equal
// the request's Host header (ports defaulted as above).
// A handshake without an Origin header is not from a browser and is never
// refused by this rule; "null" (sandboxed frames, file: pages) is allowed only
// by "*".
//
// Cost: allows() parses the origin in place and compares it with each
// pattern: O(patterns), no allocation. Threads: immutable after
// construction; const calls from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::auth {

class OriginPolicy {
 public:
  enum class Mode { any, same_host, patterns };

  // Any origin.
  OriginPolicy() = default;
  static OriginPolicy any_origin() { return OriginPolicy(); }
  static OriginPolicy same_host();
  // The listed patterns (a "*" among them: any origin). Throws
  // std::invalid_argument naming a pattern that is not of the forms above
  // (no scheme, a path, a '*' elsewhere than a whole leading label, an empty
  // list).
  static OriginPolicy from_patterns(const std::vector<std::string>& patterns);
  // The server programs' default: from_patterns(patterns) when there are
  // any; otherwise same_host() if a token key is set, else any_origin().
  static OriginPolicy for_server(const std::vector<std::string>& patterns, bool token_key_set);

  // True if a handshake with Origin `origin` ("" when the request has no
  // Origin header) and Host `host` may proceed.
  bool allows(std::string_view origin, std::string_view host) const noexcept;

  Mode mode() const noexcept { return mode_; }

 private:
  struct Pattern {
    std::string scheme;       // lower case
    std::string host;         // lower case; for a wildcard the suffix ".example.com"
    bool wildcard = false;
    int port = 0;             // explicit or the scheme's default; 0 = unknown scheme, none
  };
  Mode mode_ = Mode::any;
  std::vector<Pattern> patterns_;
};

}  // namespace heartwheel::auth
