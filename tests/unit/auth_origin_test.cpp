// The Origin check (origin_policy.h): patterns, wildcards, ports, the
// defaults with and without a token key, handshakes without an Origin.
#include <heartwheel/auth/origin_policy.h>

#include <catch2/catch.hpp>

using heartwheel::auth::OriginPolicy;
using Catch::Contains;

TEST_CASE("A handshake without an Origin header is never refused", "[auth][origin]") {
  for (const OriginPolicy& p :
       {OriginPolicy::any_origin(), OriginPolicy::same_host(),
        OriginPolicy::from_patterns({"https://chat.example.com"})}) {
    CHECK(p.allows("", "chat.example.com"));
    CHECK(p.allows("", ""));
  }
}

TEST_CASE("The default: any origin without a token key, same host with one", "[auth][origin]") {
  const OriginPolicy open = OriginPolicy::for_server({}, false);
  CHECK(open.mode() == OriginPolicy::Mode::any);
  CHECK(open.allows("https://evil.example", "chat.example.com"));
  CHECK(open.allows("null", "chat.example.com"));

  const OriginPolicy closed = OriginPolicy::for_server({}, true);
  CHECK(closed.mode() == OriginPolicy::Mode::same_host);
  CHECK(closed.allows("https://chat.example.com", "chat.example.com"));
  CHECK(closed.allows("http://localhost:8080", "localhost:8080"));
  CHECK(closed.allows("HTTP://LocalHost:8080", "localhost:8080"));
  CHECK(closed.allows("http://127.0.0.1:9000", "127.0.0.1:9000"));
  CHECK(closed.allows("http://[::1]:9000", "[::1]:9000"));
  // Default ports: an origin never writes them, a Host header may.
  CHECK(closed.allows("https://chat.example.com", "chat.example.com:443"));
  CHECK(closed.allows("http://chat.example.com", "chat.example.com:80"));
  CHECK_FALSE(closed.allows("https://chat.example.com", "chat.example.com:80"));
  CHECK_FALSE(closed.allows("http://localhost:8080", "localhost:8081"));
  CHECK_FALSE(closed.allows("http://localhost:8080", "localhost"));
  CHECK_FALSE(closed.allows("https://evil.example", "chat.example.com"));
  CHECK_FALSE(closed.allows("https://chat.example.com.evil.example", "chat.example.com"));
  CHECK_FALSE(closed.allows("null", "chat.example.com"));
  CHECK_FALSE(closed.allows("https://chat.example.com", ""));
  CHECK_FALSE(closed.allows("not an origin", "chat.example.com"));

  // Patterns replace either default.
  CHECK(OriginPolicy::for_server({"https://app.example"}, true).mode() ==
        OriginPolicy::Mode::patterns);
  CHECK(OriginPolicy::for_server({"*"}, true).mode() == OriginPolicy::Mode::any);
}

TEST_CASE("Exact patterns match scheme, host and port", "[auth][origin]") {
  const OriginPolicy p =
      OriginPolicy::from_patterns({"https://chat.example.com", "http://localhost:8080"});
  CHECK(p.allows("https://chat.example.com", "ignored"));
  CHECK(p.allows("https://CHAT.example.com", "ignored"));
  CHECK(p.allows("https://chat.example.com:443", "ignored"));
  CHECK(p.allows("http://localhost:8080", "ignored"));
  CHECK_FALSE(p.allows("http://chat.example.com", "chat.example.com"));  // scheme
  CHECK_FALSE(p.allows("https://chat.example.com:8443", "x"));           // port
  CHECK_FALSE(p.allows("http://localhost", "x"));
  CHECK_FALSE(p.allows("http://localhost:8081", "x"));
  CHECK_FALSE(p.allows("https://example.com", "x"));
  CHECK_FALSE(p.allows("https://evilchat.example.com", "x"));
  CHECK_FALSE(p.allows("https://chat.example.com.evil.example", "x"));
  CHECK_FALSE(p.allows("https://chat.example.com/path", "x"));
  CHECK_FALSE(p.allows("https://user@chat.example.com", "x"));
  CHECK_FALSE(p.allows("null", "x"));
  // A pattern does not admit the same host unless listed.
  CHECK_FALSE(p.allows("https://other.example", "other.example"));
}

TEST_CASE("Wildcard patterns match subdomains at any depth, not the domain itself",
          "[auth][origin]") {
  const OriginPolicy p = OriginPolicy::from_patterns({"https://*.example.com"});
  CHECK(p.allows("https://a.example.com", "x"));
  CHECK(p.allows("https://a.b.example.com", "x"));
  CHECK(p.allows("https://A.Example.COM", "x"));
  CHECK_FALSE(p.allows("https://example.com", "x"));
  CHECK_FALSE(p.allows("https://.example.com", "x"));
  CHECK_FALSE(p.allows("https://evilexample.com", "x"));
  CHECK_FALSE(p.allows("https://a.example.com.evil.org", "x"));
  CHECK_FALSE(p.allows("http://a.example.com", "x"));
  CHECK_FALSE(p.allows("https://a.example.com:8443", "x"));
  const OriginPolicy with_port = OriginPolicy::from_patterns({"http://*.dev.test:3000"});
  CHECK(with_port.allows("http://app.dev.test:3000", "x"));
  CHECK_FALSE(with_port.allows("http://app.dev.test", "x"));
}

TEST_CASE("A * pattern admits every origin, null included", "[auth][origin]") {
  const OriginPolicy p = OriginPolicy::from_patterns({"https://a.example", "*"});
  CHECK(p.mode() == OriginPolicy::Mode::any);
  CHECK(p.allows("https://anything.example", "x"));
  CHECK(p.allows("null", "x"));
}

TEST_CASE("Bad patterns are refused with the form to use", "[auth][origin]") {
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"example.com"}),
                    Contains("allowed origin \"example.com\": not of the form scheme://host"));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"https://example.com/"}),
                    Contains("an origin has no path"));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"https://example.com/app"}),
                    Contains("an origin has no path"));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"https://a.*.example.com"}),
                    Contains("'*' may only stand for whole leading labels"));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"https://*example.com"}),
                    Contains("'*' may only"));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"https://*."}), Contains("after \"*.\""));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"https://example.com:99999"}),
                    Contains("not of the form"));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({"https://exa mple.com"}),
                    Contains("not a host name"));
  CHECK_THROWS_WITH(OriginPolicy::from_patterns({}), Contains("the list is empty"));
  CHECK_NOTHROW(OriginPolicy::from_patterns({"http://[::1]:8080", "chrome-extension://abcdef"}));
}
