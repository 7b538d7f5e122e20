// Centrifugo's token claims on the verifier (docs/centrifugo.md): b64info,
// subs, meta and expire_at in connection tokens, info, b64info and expire_at
// in channel tokens. The tokens are HS256 over the vectors' HMAC secret,
// signed here with OpenSSL (the payloads are what this file is about; the
// signature paths are auth_token_test.cpp's, against PyJWT).
#include <heartwheel/auth/token_verifier.h>

#include "auth_support.h"
#include "hs256_jwt.h"

using namespace heartwheel::auth;
using auth_test::now;
using auth_test::verifier;

namespace {

// An HS256 JWT of `payload` (JSON text) with the vectors' HMAC secret.
std::string hs256(const std::string& payload) {
  return jwt_test::hs256(payload, auth_test::pem("hmac"));
}

std::string at(std::int64_t seconds_from_now) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count() +
      seconds_from_now);
}

}  // namespace

TEST_CASE("Centrifugo's connection claims: b64info replaces info, subs, meta and expire_at",
          "[auth][token][centrifugo]") {
  auto v = verifier("hmac");
  ConnectionClaims c;
  // {"name":"Ann"} in standard base64 (padding and all).
  const std::string token =
      hs256(R"({"sub":"ann","exp":)" + at(60) + R"(,"info":{"ignored":true},)" +
            R"("b64info":"eyJuYW1lIjoiQW5uIn0=","subs":{"news":{"info":1},"private:x":{}},)" +
            R"("meta":{"plan":"gold","n":[1, 2]},"expire_at":)" + at(3600) + "}");
  REQUIRE(v.verify_connection(token, now(), c).ok());
  CHECK(c.user == "ann");
  CHECK(c.info == R"({"name":"Ann"})");
  CHECK(c.subs == std::vector<std::string>{"news", "private:x"});
  CHECK(c.meta == R"({"plan":"gold","n":[1,2]})");
  REQUIRE(c.expire_at);
  CHECK(*c.expire_at == now() + std::chrono::hours(1));
  // The next token without them leaves nothing behind.
  REQUIRE(v.verify_connection(hs256(R"({"sub":"bob"})"), now(), c).ok());
  CHECK(c.subs.empty());
  CHECK(c.meta.empty());
  CHECK(c.info.empty());
  CHECK_FALSE(c.expire_at);
}

TEST_CASE("Centrifugo's claims of the wrong kind are malformed, naming the claim",
          "[auth][token][centrifugo]") {
  auto v = verifier("hmac");
  ConnectionClaims c;
  const auto refusal = [&](const std::string& payload) {
    const Error e = v.verify_connection(hs256(payload), now(), c);
    CHECK(e.code == errc::malformed);
    return e.message;
  };
  CHECK_THAT(refusal(R"({"b64info":"not base64!"})"), Catch::Contains("b64info"));
  CHECK_THAT(refusal(R"({"b64info":"bm90IGpzb24="})"), Catch::Contains("JSON"));  // "not json"
  CHECK_THAT(refusal(R"({"subs":["news"]})"), Catch::Contains("subs"));
  CHECK_THAT(refusal(R"({"subs":{"bad\"name":{}}})"), Catch::Contains("subs"));
  CHECK_THAT(refusal(R"({"expire_at":"soon"})"), Catch::Contains("expire_at"));
  CHECK_THAT(refusal(R"({"meta":1,"meta":2})"), Catch::Contains("twice"));
  // meta may be any JSON, a scalar too.
  REQUIRE(v.verify_connection(hs256(R"({"meta":"x"})"), now(), c).ok());
  CHECK(c.meta == "\"x\"");
}

TEST_CASE("Centrifugo's channel claims: info (or b64info) and expire_at",
          "[auth][token][centrifugo]") {
  auto v = verifier("hmac");
  SubscriptionClaims c;
  REQUIRE(v.verify_subscription(hs256(R"({"sub":"ann","channel":"private:x","info":{"role":"mod"},)"
                                      R"("expire_at":)" +
                                      at(30) + "}"),
                                now(), "ann", "private:x", c)
              .ok());
  CHECK(c.info == R"({"role":"mod"})");
  REQUIRE(c.expire_at);
  CHECK(*c.expire_at == now() + std::chrono::seconds(30));
  REQUIRE(
      v.verify_subscription(hs256(R"({"sub":"ann","channel":"private:x","b64info":"eyJyIjoxfQ"})"),
                            now(), "ann", "private:x", c)
          .ok());
  CHECK(c.info == R"({"r":1})");  // unpadded base64 too
  CHECK_FALSE(c.expire_at);
}
