// The server API key (api_key.h): loading, matching, the Authorization header.
#include <heartwheel/auth/api_key.h>

#include "auth_support.h"

using heartwheel::auth::ApiKey;
using heartwheel::auth::parse_apikey_authorization;
using Catch::Contains;

TEST_CASE("The API key matches itself and nothing else", "[auth][apikey]") {
  const ApiKey key = ApiKey::from_string("s3cr3t-key");
  CHECK(key.matches("s3cr3t-key"));
  CHECK_FALSE(key.matches("s3cr3t-kez"));
  CHECK_FALSE(key.matches("s3cr3t-key "));
  CHECK_FALSE(key.matches("s3cr3t-ke"));
  CHECK_FALSE(key.matches("S3CR3T-KEY"));
  CHECK_FALSE(key.matches(""));
}

TEST_CASE("The API key loads from a file without its trailing newline", "[auth][apikey]") {
  auth_test::TempDir dir;
  const ApiKey key = ApiKey::from_file(dir.write("api.key", "abc123\n"));
  CHECK(key.matches("abc123"));
  CHECK_FALSE(key.matches("abc123\n"));
  CHECK(ApiKey::from_file(dir.write("crlf.key", "abc123\r\n")).matches("abc123"));

  const std::string missing = dir.path("nope.key");
  CHECK_THROWS_WITH(ApiKey::from_file(missing), "API key file " + missing + ": no such file");
  const std::string empty = dir.write("empty.key", "\n");
  CHECK_THROWS_WITH(ApiKey::from_file(empty), "API key file " + empty + ": empty");
  CHECK_THROWS_WITH(ApiKey::from_file(dir.write("two.key", "abc\ndef\n")),
                    Contains("whitespace or control characters"));
  CHECK_THROWS_WITH(ApiKey::from_file(dir.write("space.key", "abc def")),
                    Contains("whitespace or control characters"));
  CHECK_THROWS_WITH(ApiKey::from_file(dir.path()), Contains("is a directory"));
  CHECK_THROWS_WITH(ApiKey::from_string(""), Contains("empty"));
}

TEST_CASE("Authorization: apikey KEY is parsed, other schemes are not", "[auth][apikey]") {
  CHECK(parse_apikey_authorization("apikey abc") == std::optional<std::string_view>("abc"));
  CHECK(parse_apikey_authorization("ApiKey abc") == std::optional<std::string_view>("abc"));
  CHECK(parse_apikey_authorization("APIKEY \t abc  ") == std::optional<std::string_view>("abc"));
  CHECK(parse_apikey_authorization("  apikey abc") == std::optional<std::string_view>("abc"));
  CHECK_FALSE(parse_apikey_authorization("apikey"));
  CHECK_FALSE(parse_apikey_authorization("apikey "));
  CHECK_FALSE(parse_apikey_authorization("apikeyabc"));
  CHECK_FALSE(parse_apikey_authorization("apikey a b"));
  CHECK_FALSE(parse_apikey_authorization("Bearer abc"));
  CHECK_FALSE(parse_apikey_authorization("Basic YWxhZGRpbjpvcGVuc2VzYW1l"));
  CHECK_FALSE(parse_apikey_authorization(""));
  // The view points into the header value: no copy.
  const std::string header = "apikey xyz";
  const auto key = parse_apikey_authorization(header);
  REQUIRE(key);
  CHECK(key->data() == header.data() + 7);
}
