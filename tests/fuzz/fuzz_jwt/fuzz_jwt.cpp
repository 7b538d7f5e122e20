// Fuzz target: token verification (heartwheel/auth/token_verifier.h): strict
// base64url, and the SAX readers of the JOSE header and of the claims.
// Input: mode:u8 | bytes.
//
// mode bit 0 clear: `bytes` is a whole token, verified against an HMAC secret
//   and an ES256 key at a fixed instant. A fuzzer cannot forge a signature,
//   so: never ok; the code is one of the token codes; the message is
//   printable ASCII and not empty.
// mode bit 0 set: `bytes` is a claims payload. The target signs it (HS256 of
//   a fixed header and the payload, OpenSSL's HMAC) into a token and verifies
//   that, so the claims reader sees every payload the fuzzer makes. Oracle:
//   nlohmann-json's DOM parser (a parser callback sees repeated keys) and the
//   rules of token_verifier.h and claims.h give the expected code and claims;
//   the reader agrees: same code; when ok, the same sub, exp, iat and
//   channels, and `info` as text parses to the payload's info value.
// One verifier for all inputs (its contexts and remembered header reused, as
// on a worker).
#include <heartwheel/auth/channel_name.h>
#include <heartwheel/auth/token_verifier.h>

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fuzz_input.h"

namespace {

namespace auth = heartwheel::auth;
using json = nlohmann::json;

const std::string kSecret = "fuzz-secret-of-at-least-32-bytes-0123456789";
// Not the key of tests/unit/auth_vectors.json: the seeds include that file's
// valid ES256 token, which must reach the signature check and fail there.
const char* kEcPem =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9XCCvIzzhD/JF6dK4BAVBeZVMnsE\n"
    "dJJwZTSYA0aP48TpYxZpnFjVIM55J2NvATyZXfaz8ztRV//6gxBiOxGTfg==\n"
    "-----END PUBLIC KEY-----\n";
const auth::WallTime kNow{std::chrono::seconds(1700000000)};
constexpr auto kLeeway = std::chrono::seconds(5);

std::string base64url(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  std::replace(out.begin(), out.end(), '+', '-');
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

std::string sign_hs256(std::string_view payload) {
  const std::string input = base64url(R"({"alg":"HS256","typ":"JWT"})") + "." + base64url(payload);
  unsigned char mac[EVP_MAX_MD_SIZE];
  std::size_t mac_size = 0;
  FUZZ_CHECK(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, kSecret.data(),
                       kSecret.size(), reinterpret_cast<const unsigned char*>(input.data()),
                       input.size(), mac, sizeof mac, &mac_size) != nullptr);
  return input + "." + base64url({reinterpret_cast<const char*>(mac), mac_size});
}

// A NumericDate as claims.h reads it.
auth::WallTime numeric_date(double seconds) {
  seconds = std::min(9e9, std::max(-9e9, seconds));
  return auth::WallTime(std::chrono::duration_cast<auth::WallTime::duration>(
      std::chrono::duration<double>(seconds)));
}

int depth_of(const json& v) {
  int deepest = 0;
  if (v.is_structured())
    for (const auto& e : v) deepest = std::max(deepest, depth_of(e));
  return v.is_structured() ? deepest + 1 : 0;
}

struct Expected {
  auth::errc code = auth::errc::ok;
  json claims;  // the payload, when ok
};

// The verdict token_verifier.h's rules give for a connection token carrying
// `payload`, from nlohmann's DOM.
Expected expect(std::string_view payload) {
  static const char* known[] = {"sub", "exp", "nbf", "iat", "info", "channels"};
  bool repeated = false;
  int seen[6] = {};
  const json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& v) {
    if (event == json::parse_event_t::key && depth == 1)
      for (int i = 0; i < 6; ++i)
        if (v == known[i] && ++seen[i] > 1) repeated = true;
    return true;
  };
  Expected e;
  e.code = auth::errc::malformed;
  json doc = json::parse(payload.begin(), payload.end(), callback, false);
  if (doc.is_discarded() || !doc.is_object() || repeated) return e;
  if (doc.contains("sub") && !doc["sub"].is_string()) return e;
  for (const char* t : {"exp", "nbf", "iat"})
    if (doc.contains(t) && !doc[t].is_number()) return e;
  if (doc.contains("channels")) {
    const json& c = doc["channels"];
    if (!c.is_array()) return e;
    for (const json& name : c)
      if (!name.is_string() || !auth::is_valid_channel_name(name.get_ref<const std::string&>()))
        return e;
  }
  if (doc.contains("info") && depth_of(doc["info"]) > 63) return e;
  if (doc.contains("exp") && kNow >= numeric_date(doc["exp"].get<double>()) + kLeeway) {
    e.code = auth::errc::expired;
    return e;
  }
  if (doc.contains("nbf") && kNow < numeric_date(doc["nbf"].get<double>()) - kLeeway) {
    e.code = auth::errc::not_yet_valid;
    return e;
  }
  e.code = auth::errc::ok;
  e.claims = std::move(doc);
  return e;
}

void check_message(const auth::Error& e) {
  FUZZ_CHECK(e.message.empty() == e.ok());
  for (const char c : e.message) FUZZ_CHECK(c >= 0x20 && c < 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static auth::TokenVerifier hmac(auth::TokenKey::hmac_secret(kSecret),
                                  auth::VerifierOptions{kLeeway, 16 * 1024});
  static auth::TokenVerifier ec(auth::TokenKey::ecdsa_public_key_pem(kEcPem));
  const std::string_view bytes = fuzz::as_view(data + 1, size - 1);
  auth::ConnectionClaims claims;

  if ((data[0] & 1) == 0) {
    for (auth::TokenVerifier* v : {&hmac, &ec}) {
      const auth::Error e = v->verify_connection(bytes, kNow, claims);
      FUZZ_CHECK(!e.ok());
      FUZZ_CHECK(e.code >= auth::errc::missing_token && e.code <= auth::errc::not_yet_valid);
      check_message(e);
      auth::SubscriptionClaims sub;
      const auth::Error s = v->verify_subscription(bytes, kNow, "u", "c", sub);
      FUZZ_CHECK(!s.ok());
      check_message(s);
    }
    return 0;
  }

  const Expected want = expect(bytes);
  const auth::Error got = hmac.verify_connection(sign_hs256(bytes), kNow, claims);
  check_message(got);
  if (got.code != want.code) {
    std::fprintf(stderr, "reader: %s (%s), oracle: %s\n",
                 std::string(auth::code_name(got.code)).c_str(), got.message.c_str(),
                 std::string(auth::code_name(want.code)).c_str());
    FUZZ_CHECK(got.code == want.code);
  }
  if (!got.ok()) return 0;
  const json& c = want.claims;
  FUZZ_CHECK(claims.user == c.value("sub", ""));
  FUZZ_CHECK(claims.expires.has_value() == c.contains("exp"));
  if (claims.expires) FUZZ_CHECK(*claims.expires == numeric_date(c["exp"].get<double>()));
  FUZZ_CHECK(claims.issued_at.has_value() == c.contains("iat"));
  if (claims.issued_at) FUZZ_CHECK(*claims.issued_at == numeric_date(c["iat"].get<double>()));
  FUZZ_CHECK(claims.channels == c.value("channels", std::vector<std::string>{}));
  FUZZ_CHECK(claims.info.empty() == !c.contains("info"));
  if (c.contains("info")) {
    const json info = json::parse(claims.info, nullptr, false);
    FUZZ_CHECK(!info.is_discarded());
    FUZZ_CHECK(info == c["info"]);
  }
  return 0;
}
