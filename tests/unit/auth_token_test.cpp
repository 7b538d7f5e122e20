// TokenVerifier against tokens made by PyJWT (tests/unit/auth_vectors.json):
// every algorithm, the refusals in token_verifier.h's table, the claims, the
// leeway, subscription tokens.
#include <heartwheel/auth/token_verifier.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "auth_support.h"

using namespace heartwheel::auth;
using namespace std::chrono_literals;
using auth_test::now;
using auth_test::token;
using auth_test::vector;
using auth_test::verifier;

namespace {

const std::string kChannel = "private:room";
const std::string kUser = "alice";

Error verify(const std::string& name, std::chrono::seconds leeway = 5s) {
  const auto& v = vector(name);
  auto verifier = auth_test::verifier(v.at("key").get<std::string>(), leeway);
  if (v.value("kind", "connection") == "subscription") {
    SubscriptionClaims claims;
    return verifier.verify_subscription(v.at("token").get<std::string>(), now(), kUser, kChannel,
                                        claims);
  }
  ConnectionClaims claims;
  return verifier.verify_connection(v.at("token").get<std::string>(), now(), claims);
}

std::string code_of(const std::string& name, std::chrono::seconds leeway = 5s) {
  return std::string(code_name(verify(name, leeway).code));
}

// A NumericDate as the verifier reads it: held within +-9e9 s (claims.h).
WallTime at(double seconds) {
  seconds = std::min(9e9, std::max(-9e9, seconds));
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      std::chrono::duration<double>(seconds)));
}

// The connection claims a valid vector must read as: those recorded next to it.
void check_claims(const ConnectionClaims& c, const nlohmann::json& expected) {
  CHECK(c.user == expected.value("sub", ""));
  if (expected.contains("exp")) {
    REQUIRE(c.expires);
    CHECK(*c.expires == at(expected.at("exp").get<double>()));
  } else {
    CHECK_FALSE(c.expires);
  }
  if (expected.contains("iat")) {
    REQUIRE(c.issued_at);
    CHECK(*c.issued_at == at(expected.at("iat").get<double>()));
  } else {
    CHECK_FALSE(c.issued_at);
  }
  if (expected.contains("info")) {
    INFO("info text: " << c.info);
    REQUIRE_FALSE(c.info.empty());
    CHECK(nlohmann::json::parse(c.info) == expected.at("info"));
  } else {
    CHECK(c.info.empty());
  }
  CHECK(c.channels == expected.value("channels", std::vector<std::string>{}));
}

}  // namespace

TEST_CASE("Every PyJWT vector verifies to the code written next to it", "[auth][token]") {
  const auto& all = auth_test::vectors().at("vectors");
  REQUIRE(all.size() > 60);
  for (const auto& v : all) {
    const std::string name = v.at("name");
    const Error e = verify(name);
    INFO(name << ": " << e.message);
    CHECK(code_name(e.code) == v.at("expect").get<std::string>());
    // A refusal always says why; a success says nothing. Messages are
    // printable ASCII even when the token is not (hs256_invalid_utf8), so they
    // go into JSON replies and logs as they are.
    CHECK(e.message.empty() == e.ok());
    for (const char c : e.message) CHECK((c >= 0x20 && c < 0x7f));
  }
}

TEST_CASE("Valid HS256, HS384 and HS512 tokens verify and their claims are read",
          "[auth][token]") {
  for (const std::string name : {"hs256_valid", "hs384_valid", "hs512_valid"}) {
    INFO(name);
    auto v = verifier("hmac");
    ConnectionClaims c;
    const Error e = v.verify_connection(token(name), now(), c);
    REQUIRE(e.ok());
    check_claims(c, vector(name).at("claims"));
    CHECK(c.user == "alice");
    CHECK(c.channels == std::vector<std::string>{"news", "dm:#alice,bob"});
  }
}

TEST_CASE("Valid RS256, RS384 and RS512 tokens verify, with SPKI and PKCS#1 keys",
          "[auth][token]") {
  for (const auto& [name, key] : std::vector<std::pair<std::string, std::string>>{
           {"rs256_valid", "rsa"}, {"rs384_valid", "rsa"}, {"rs512_valid", "rsa"},
           {"rs256_valid_pkcs1_key", "rsa_pkcs1"}}) {
    INFO(name);
    auto v = verifier(key);
    ConnectionClaims c;
    REQUIRE(v.verify_connection(token(name), now(), c).ok());
    check_claims(c, vector(name).at("claims"));
  }
}

TEST_CASE("Valid ES256, ES384 and ES512 tokens verify (JWS r||s converted to DER)",
          "[auth][token]") {
  for (const auto& [name, key] : std::vector<std::pair<std::string, std::string>>{
           {"es256_valid", "ec256"}, {"es384_valid", "ec384"}, {"es512_valid", "ec521"}}) {
    INFO(name);
    auto v = verifier(key);
    ConnectionClaims c;
    REQUIRE(v.verify_connection(token(name), now(), c).ok());
    check_claims(c, vector(name).at("claims"));
  }
}

TEST_CASE("No token is missing_token", "[auth][token]") {
  auto v = verifier("hmac");
  ConnectionClaims c;
  const Error e = v.verify_connection("", now(), c);
  CHECK(e.code == errc::missing_token);
  CHECK(e.message == "no token");
  SubscriptionClaims s;
  CHECK(v.verify_subscription("", now(), kUser, kChannel, s).code == errc::missing_token);
}

TEST_CASE("Malformed tokens are refused with a message naming what is wrong", "[auth][token]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"hs256_two_parts", "three base64url parts"},
      {"hs256_four_parts", "this token has 4"},
      {"hs256_padded_header", "header is not base64url"},
      {"hs256_padded_signature", "signature is not base64url"},
      {"hs256_whitespace", "payload is not base64url"},
      {"hs256_standard_base64_alphabet", "signature is not base64url"},
      {"hs256_noncanonical_signature", "signature is not base64url"},
      {"hs256_empty_signature", "signature is not base64url"},
      {"header_not_json", "header is not valid JSON"},
      {"header_without_alg", "no \"alg\""},
      {"header_alg_not_string", "\"alg\" is not a string"},
      {"hs256_crit_header", "\"crit\""},
      {"hs256_payload_not_json", "payload is not valid JSON"},
      {"hs256_payload_trailing_garbage", "payload is not valid JSON"},
      {"hs256_invalid_utf8", "payload is not valid JSON"},
      {"hs256_payload_array", "payload is not a JSON object"},
      {"hs256_duplicate_sub", "claim \"sub\" appears twice"},
      {"hs256_duplicate_exp", "claim \"exp\" appears twice"},
      {"hs256_sub_not_string", "claim \"sub\" must be a string"},
      {"hs256_exp_not_number", "claim \"exp\" must be a number"},
      {"hs256_nbf_null", "claim \"nbf\" must be a number"},
      {"hs256_channels_not_array", "claim \"channels\" must be an array"},
      {"hs256_channels_not_strings", "claim \"channels\" must be an array"},
      {"hs256_channels_nested", "claim \"channels\" must be an array"},
      {"hs256_channels_bad_name", "invalid channel name"},
  };
  for (const auto& [name, words] : cases) {
    const Error e = verify(name);
    INFO(name << ": " << e.message);
    CHECK(e.code == errc::malformed);
    CHECK(e.message.find(words) != std::string::npos);
  }
  auto v = verifier("hmac");
  ConnectionClaims c;
  for (const std::string text : {"abc", ".", "..", "a..", "..b", "a.b.c", "a.b.c.d"}) {
    INFO(text);
    CHECK(v.verify_connection(text, now(), c).code == errc::malformed);
  }
}

TEST_CASE("A base64url signature that differs only in its unused bits is refused",
          "[auth][token]") {
  // The same MAC bytes as the valid token: a lenient decoder would accept it.
  const std::string valid = token("hs256_valid");
  const std::string odd = token("hs256_noncanonical_signature");
  REQUIRE(valid.substr(0, valid.rfind('.')) == odd.substr(0, odd.rfind('.')));
  REQUIRE(valid.back() != odd.back());
  CHECK(code_of("hs256_noncanonical_signature") == "malformed");
}

TEST_CASE("A signature that does not verify is bad_signature, and the verifier keeps working",
          "[auth][token]") {
  for (const auto& [bad, good, key] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"hs256_other_secret", "hs256_valid", "hmac"},
           {"hs256_payload_swapped", "hs512_valid", "hmac"},
           {"rs256_other_key", "rs256_valid", "rsa"},
           {"es256_other_key", "es256_valid", "ec256"},
           {"es256_signature_bit_flipped", "es256_valid", "ec256"},
           {"es256_signature_truncated", "es256_valid", "ec256"}}) {
    INFO(bad);
    // One verifier, its contexts reused: a refusal must not disturb the next
    // verification, nor a success the next refusal.
    auto v = verifier(key);
    ConnectionClaims c;
    for (int round = 0; round < 3; ++round) {
      const Error e = v.verify_connection(token(bad), now(), c);
      CHECK(e.code == errc::bad_signature);
      CHECK(e.message.find("does not verify") != std::string::npos);
      CHECK(v.verify_connection(token(good), now(), c).ok());
    }
  }
}

TEST_CASE("alg none is refused whatever the key", "[auth][token]") {
  for (const std::string name : {"alg_none", "alg_none_against_rsa"}) {
    const Error e = verify(name);
    INFO(e.message);
    CHECK(e.code == errc::wrong_algorithm);
    CHECK(e.message.find("\"none\"") != std::string::npos);
  }
}

TEST_CASE("An HS256 token signed with the public key PEM as secret is refused as wrong_algorithm",
          "[auth][token]") {
  // The algorithm-confusion attack: the server holds an RSA (or EC) public
  // key; the attacker signs HS256 with that public key's PEM text as the
  // secret. alg is pinned to the key's kind, so no HMAC is ever computed.
  for (const std::string name :
       {"hs256_signed_with_rsa_public_pem", "hs256_signed_with_ec_public_pem"}) {
    const Error e = verify(name);
    INFO(e.message);
    CHECK(e.code == errc::wrong_algorithm);
    CHECK(e.message.find("does not match the configured") != std::string::npos);
  }
  // And the PEM cannot be configured as an HMAC secret either.
  CHECK_THROWS_WITH(TokenKey::hmac_secret(auth_test::pem("rsa")),
                    Catch::Contains("algorithm-confusion"));
}

TEST_CASE("Algorithms of another key kind or curve, and unknown ones, are refused",
          "[auth][token]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"rs256_against_hmac", "HS256, HS384, HS512"},
      {"es256_against_rsa", "RS256, RS384, RS512"},
      {"es384_against_p256", "accepts ES256"},
      {"ps256_unsupported", "\"PS256\" is not supported"}};
  for (const auto& [name, words] : cases) {
    const Error e = verify(name);
    INFO(name << ": " << e.message);
    CHECK(e.code == errc::wrong_algorithm);
    CHECK(e.message.find(words) != std::string::npos);
  }
}

TEST_CASE("exp and nbf are checked against now with the leeway", "[auth][token]") {
  CHECK(code_of("hs256_expired") == "expired");
  CHECK(code_of("es256_expired") == "expired");
  CHECK(code_of("hs256_not_yet_valid") == "not_yet_valid");
  // 3 s past exp, 3 s before nbf: inside a 5 s leeway, outside none.
  CHECK(code_of("hs256_expired_within_leeway", 5s) == "ok");
  CHECK(code_of("hs256_expired_within_leeway", 0s) == "expired");
  CHECK(code_of("hs256_expired_within_leeway", 3s) == "expired");  // now == exp + leeway
  CHECK(code_of("hs256_expired_within_leeway", 4s) == "ok");
  CHECK(code_of("hs256_nbf_within_leeway", 5s) == "ok");
  CHECK(code_of("hs256_nbf_within_leeway", 0s) == "not_yet_valid");
  CHECK(code_of("hs256_nbf_within_leeway", 3s) == "ok");  // now == nbf - leeway
  // RFC 7519: valid only before exp.
  CHECK(code_of("hs256_exp_is_now", 0s) == "expired");
  CHECK(code_of("hs256_exp_is_now", 1s) == "ok");

  // The same tokens at other instants: time is a parameter.
  auto v = verifier("hmac", 0s);
  ConnectionClaims c;
  CHECK(v.verify_connection(token("hs256_expired"), now() - 61s, c).ok());
  CHECK(v.verify_connection(token("hs256_expired"), now() - 60s, c).code == errc::expired);
  CHECK(v.verify_connection(token("hs256_not_yet_valid"), now() + 60s, c).ok());
  CHECK(v.verify_connection(token("hs256_not_yet_valid"), now() + 59s, c).code ==
        errc::not_yet_valid);
}

TEST_CASE("Time refusals say how far off the token is and what to do", "[auth][token]") {
  const Error expired = verify("hs256_expired");
  CHECK(expired.message ==
        "token expired 60s ago (exp 1699999940, leeway 5s); get a fresh token");
  const Error early = verify("hs256_not_yet_valid");
  CHECK(early.message.find("not valid for another 60s (nbf 1700000060, leeway 5s)") !=
        std::string::npos);
}

TEST_CASE("time_left is exp + leeway - now, and nothing without exp", "[auth][token]") {
  auto v = verifier("hmac", 5s);
  ConnectionClaims c;
  REQUIRE(v.verify_connection(token("hs256_valid"), now(), c).ok());
  CHECK(v.time_left(c.expires, now()) == std::chrono::nanoseconds(3605s));
  CHECK(v.time_left(c.expires, now() + 3605s) == std::chrono::nanoseconds(0));
  CHECK(v.time_left(c.expires, now() + 3700s) < std::chrono::nanoseconds(0));
  REQUIRE(v.verify_connection(token("hs256_no_exp"), now(), c).ok());
  CHECK_FALSE(v.time_left(c.expires, now()));
}

TEST_CASE("Claims: anonymous users, info of every JSON type as JSON text, unknown claims ignored",
          "[auth][token]") {
  auto v = verifier("hmac");
  ConnectionClaims c;
  for (const std::string name : {"hs256_anonymous", "hs256_empty_sub", "hs256_no_exp",
                                 "hs256_fractional_times", "hs256_unknown_claims_ignored",
                                 "hs256_extra_header_fields"}) {
    INFO(name);
    REQUIRE(v.verify_connection(token(name), now(), c).ok());
    check_claims(c, vector(name).at("claims"));
  }
  int infos = 0;
  for (const auto& vec : auth_test::vectors().at("vectors")) {
    const std::string name = vec.at("name");
    if (name.rfind("hs256_info_", 0) != 0) continue;
    ++infos;
    INFO(name);
    REQUIRE(v.verify_connection(token(name), now(), c).ok());
    check_claims(c, vec.at("claims"));
  }
  CHECK(infos == 8);
  // Compact text: the parser's output needs no whitespace.
  REQUIRE(v.verify_connection(token("hs256_info_[1,[2,[3]]]"), now(), c).ok());
  CHECK(c.info == "[1,[2,[3]]]");
  REQUIRE(v.verify_connection(token("hs256_info_12345678901234567890"), now(), c).ok());
  CHECK(c.info == "12345678901234567890");
  REQUIRE(v.verify_connection(token("hs256_valid"), now(), c).ok());
  CHECK(c.info.find(' ') == c.info.find("Alice ") + 5);  // the only space is inside a string
  CHECK(c.info.find("\\\"hi\\\"") != std::string::npos);  // quotes escaped again
}

TEST_CASE("A reused claims struct holds only the last token's claims", "[auth][token]") {
  auto v = verifier("hmac");
  ConnectionClaims c;
  REQUIRE(v.verify_connection(token("hs256_valid"), now(), c).ok());
  REQUIRE(c.channels.size() == 2);
  REQUIRE_FALSE(c.info.empty());
  REQUIRE(v.verify_connection(token("hs256_no_exp"), now(), c).ok());
  CHECK(c.user == "bob");
  CHECK(c.channels.empty());
  CHECK(c.info.empty());
  CHECK_FALSE(c.expires);
  CHECK_FALSE(c.issued_at);
}

TEST_CASE("Subscription tokens: the channel and the user must match", "[auth][token]") {
  auto v = verifier("hmac");
  SubscriptionClaims s;
  REQUIRE(v.verify_subscription(token("sub_valid"), now(), kUser, kChannel, s).ok());
  CHECK(s.user == "alice");
  CHECK(s.channel == "private:room");
  REQUIRE(s.expires);
  CHECK(*s.expires == now() + 3600s);

  Error e = v.verify_subscription(token("sub_valid"), now(), kUser, "private:other", s);
  CHECK(e.code == errc::wrong_channel);
  e = v.verify_subscription(token("sub_valid"), now(), "bob", kChannel, s);
  CHECK(e.code == errc::wrong_user);
  CHECK(e.message ==
        "the subscription token is for user \"alice\", not this connection's user \"bob\"");
  e = v.verify_subscription(token("sub_wrong_channel"), now(), kUser, kChannel, s);
  CHECK(e.message ==
        "the subscription token is for channel \"private:other\", not \"private:room\"");
  // A token without sub is for anonymous connections only.
  CHECK(v.verify_subscription(token("sub_no_sub_for_alice"), now(), "", kChannel, s).ok());
  CHECK(v.verify_subscription(token("sub_no_sub_for_alice"), now(), kUser, kChannel, s).code ==
        errc::wrong_user);
  // A connection token is not a subscription token: it has no channel.
  CHECK(v.verify_subscription(token("hs256_valid"), now(), kUser, kChannel, s).code ==
        errc::malformed);

  auto es = verifier("ec256");
  CHECK(es.verify_subscription(token("sub_valid_es256"), now(), kUser, kChannel, s).ok());
}

TEST_CASE("A token longer than max_token_bytes is refused before any work", "[auth][token]") {
  VerifierOptions options;
  options.max_token_bytes = 64;
  TokenVerifier v(auth_test::key("hmac"), options);
  ConnectionClaims c;
  const Error e = v.verify_connection(token("hs256_valid"), now(), c);
  CHECK(e.code == errc::malformed);
  CHECK(e.message.find("more than the 64 accepted") != std::string::npos);
  CHECK(v.verify_connection(std::string(64, 'a'), now(), c).code == errc::malformed);

  CHECK_THROWS_AS(TokenVerifier(auth_test::key("hmac"), VerifierOptions{-1s, 100}),
                  std::invalid_argument);
  CHECK_THROWS_AS(TokenVerifier(auth_test::key("hmac"), VerifierOptions{1s, 0}),
                  std::invalid_argument);
}

TEST_CASE("Verifiers on several threads share one key", "[auth][token]") {
  // One TokenKey (immutable, shared), one TokenVerifier per thread.
  for (const std::string key : {"hmac", "ec256"}) {
    const TokenKey shared = auth_test::key(key);
    const std::string good = token(key == "hmac" ? "hs256_valid" : "es256_valid");
    const std::string bad = token(key == "hmac" ? "hs256_other_secret" : "es256_other_key");
    std::vector<int> wrong(3, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        TokenVerifier v(shared);
        ConnectionClaims c;
        for (int i = 0; i < 100; ++i) {
          if (!v.verify_connection(good, now(), c).ok()) ++wrong[t];
          if (v.verify_connection(bad, now(), c).code != errc::bad_signature) ++wrong[t];
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(wrong == std::vector<int>(3, 0));
  }
}

TEST_CASE("A repeated header skips its parse, never the signature or the other checks",
          "[auth][token]") {
  // The verifier remembers the last accepted header (every token of one
  // issuer repeats it): what follows must still be checked in full.
  auto v = verifier("hmac");
  ConnectionClaims c;
  REQUIRE(v.verify_connection(token("hs256_valid"), now(), c).ok());
  const std::string valid = token("hs256_valid");
  const std::string swapped = token("hs256_payload_swapped");
  REQUIRE(valid.substr(0, valid.find('.')) == swapped.substr(0, swapped.find('.')));
  CHECK(v.verify_connection(swapped, now(), c).code == errc::bad_signature);
  CHECK(v.verify_connection(token("hs256_expired"), now(), c).code == errc::expired);
  CHECK(v.verify_connection(token("hs256_whitespace"), now(), c).code == errc::malformed);
  CHECK(v.verify_connection(token("alg_none"), now(), c).code == errc::wrong_algorithm);
  CHECK(v.verify_connection(token("hs256_crit_header"), now(), c).code == errc::malformed);
  CHECK(v.verify_connection(token("rs256_against_hmac"), now(), c).code == errc::wrong_algorithm);
  // An HS512 header replaces the remembered HS256 one; both keep working.
  CHECK(v.verify_connection(token("hs512_valid"), now(), c).ok());
  CHECK(v.verify_connection(valid, now(), c).ok());
  CHECK(v.verify_connection(token("hs512_valid"), now(), c).ok());
}

TEST_CASE("Randomized payloads: the claims reader agrees with Python's json module",
          "[auth][token]") {
  // 150 payloads PyJWT signed (auth_vectors.py, random_payloads): claims of
  // right and wrong types, repeated claims, any JSON in info and unknown
  // claims, escapes, non-ASCII, whitespace; verdicts and claims computed in
  // Python. One verifier and one claims struct for all (reuse on every path).
  auto v = verifier("hmac");
  ConnectionClaims c;
  int ok = 0, refused = 0;
  for (const auto& vec : auth_test::vectors().at("vectors")) {
    const std::string name = vec.at("name");
    if (name.rfind("random_", 0) != 0) continue;
    const Error e = v.verify_connection(vec.at("token").get<std::string>(), now(), c);
    INFO(name << ": " << e.message);
    REQUIRE(code_name(e.code) == vec.at("expect").get<std::string>());
    if (e.ok()) {
      check_claims(c, vec.at("claims"));
      ++ok;
    } else {
      ++refused;
    }
  }
  CHECK(ok > 50);
  CHECK(refused > 30);
}
