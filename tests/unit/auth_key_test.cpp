// Loading token keys (token_key.h): the kinds, the algorithms each pins, and
// the errors for files a person gets wrong.
#include <heartwheel/auth/token_key.h>
#include <heartwheel/auth/token_verifier.h>

#include <sys/stat.h>
#include <unistd.h>

#include "auth_support.h"

using namespace heartwheel::auth;
using auth_test::pem;
using auth_test::TempDir;
using Catch::Contains;

TEST_CASE("Each key kind accepts exactly its algorithms", "[auth][key]") {
  const TokenKey hmac = auth_test::key("hmac");
  CHECK(hmac.kind() == KeyKind::hmac_secret);
  CHECK(hmac.accepts("HS256"));
  CHECK(hmac.accepts("HS384"));
  CHECK(hmac.accepts("HS512"));
  CHECK_FALSE(hmac.accepts("RS256"));
  CHECK_FALSE(hmac.accepts("none"));
  CHECK_FALSE(hmac.accepts("hs256"));  // alg names are case-sensitive
  CHECK(hmac.algorithms() == "HS256, HS384, HS512");
  CHECK(hmac.describe() == "HMAC secret (39 bytes)");

  const TokenKey rsa = auth_test::key("rsa");
  CHECK(rsa.kind() == KeyKind::rsa_public);
  CHECK(rsa.accepts("RS256"));
  CHECK(rsa.accepts("RS512"));
  CHECK_FALSE(rsa.accepts("HS256"));
  CHECK_FALSE(rsa.accepts("PS256"));
  CHECK(rsa.describe() == "RSA public key (2048 bits)");

  const std::vector<std::pair<std::string, std::string>> curves = {
      {"ec256", "ES256"}, {"ec384", "ES384"}, {"ec521", "ES512"}};
  for (const auto& [name, alg] : curves) {
    const TokenKey ec = auth_test::key(name);
    CHECK(ec.kind() == KeyKind::ecdsa_public);
    CHECK(ec.algorithms() == alg);
    for (const std::string other : {"ES256", "ES384", "ES512", "HS256", "RS256"})
      CHECK(ec.accepts(other) == (other == alg));
  }
  CHECK(auth_test::key("ec256").describe() == "EC public key (P-256)");
}

TEST_CASE("Keys load from files, and a secret's trailing newline is not part of it", "[auth][key]") {
  TempDir dir;
  const std::string secret = auth_test::vectors().at("keys").at("hmac");
  const TokenKey from_file = TokenKey::hmac_secret_file(dir.write("secret", secret + "\r\n"));
  TokenVerifier v(from_file);
  ConnectionClaims c;
  CHECK(v.verify_connection(auth_test::token("hs256_valid"), auth_test::now(), c).ok());

  TokenVerifier rsa(TokenKey::rsa_public_key_file(dir.write("rsa.pem", pem("rsa"))));
  CHECK(rsa.verify_connection(auth_test::token("rs256_valid"), auth_test::now(), c).ok());
  TokenVerifier ec(TokenKey::ecdsa_public_key_file(dir.write("ec.pem", pem("ec256"))));
  CHECK(ec.verify_connection(auth_test::token("es256_valid"), auth_test::now(), c).ok());
}

TEST_CASE("Missing, empty, unreadable and directory key files are refused by name",
          "[auth][key]") {
  TempDir dir;
  const std::string missing = dir.path("nope.pem");
  CHECK_THROWS_WITH(TokenKey::hmac_secret_file(missing),
                    "HMAC secret file " + missing + ": no such file");
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_file(missing),
                    "RSA public key file " + missing + ": no such file");
  CHECK_THROWS_WITH(TokenKey::ecdsa_public_key_file(missing),
                    "ECDSA public key file " + missing + ": no such file");
  CHECK_THROWS_WITH(TokenKey::hmac_secret_file(""), Contains("no file name given"));

  const std::string empty = dir.write("empty", "");
  CHECK_THROWS_WITH(TokenKey::hmac_secret_file(empty), "HMAC secret file " + empty + ": empty");
  const std::string newline = dir.write("newline", "\n");
  CHECK_THROWS_WITH(TokenKey::hmac_secret_file(newline), Contains(": empty"));
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_file(empty), Contains(": empty"));
  CHECK_THROWS_WITH(TokenKey::ecdsa_public_key_file(newline), Contains(": empty"));

  CHECK_THROWS_WITH(TokenKey::rsa_public_key_file(dir.path()), Contains("is a directory"));

  if (::geteuid() != 0) {  // root reads anything
    const std::string locked = dir.write("locked", "x");
    REQUIRE(::chmod(locked.c_str(), 0) == 0);
    CHECK_THROWS_WITH(TokenKey::hmac_secret_file(locked), Contains("permission denied"));
  }
}

TEST_CASE("Short secrets and PEM text as a secret are refused", "[auth][key]") {
  CHECK_THROWS_WITH(TokenKey::hmac_secret("secret"),
                    Contains("the secret is 6 bytes; HS256 needs at least 32"));
  CHECK_NOTHROW(TokenKey::hmac_secret(std::string(32, 'k')));
  CHECK_THROWS_WITH(TokenKey::hmac_secret(""), Contains("empty"));
  CHECK_THROWS_WITH(TokenKey::hmac_secret(pem("ec256")), Contains("holds a PEM key"));
}

TEST_CASE("Public key files of the wrong kind say which kind they hold", "[auth][key]") {
  TempDir dir;
  const std::string ec = dir.write("ec.pem", pem("ec256"));
  const std::string rsa = dir.write("rsa.pem", pem("rsa"));
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_file(ec),
                    "RSA public key file " + ec +
                        ": holds an EC key, not an RSA public key (load it as an ECDSA key)");
  CHECK_THROWS_WITH(TokenKey::ecdsa_public_key_file(rsa),
                    "ECDSA public key file " + rsa +
                        ": holds an RSA key, not an EC public key (load it as an RSA key)");
  CHECK_THROWS_WITH(TokenKey::ecdsa_public_key_pem(pem("ed25519")),
                    Contains("holds an Ed25519 key, not an EC public key"));
}

TEST_CASE("Private keys, certificates and non-PEM files are refused with the command to fix them",
          "[auth][key]") {
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_pem(pem("rsa_private")),
                    Contains("holds a private key") && Contains("openssl pkey -in KEY.pem -pubout"));
  CHECK_THROWS_WITH(TokenKey::ecdsa_public_key_pem(pem("ec_private")),
                    Contains("holds a private key"));
  CHECK_THROWS_WITH(TokenKey::ecdsa_public_key_pem(pem("certificate")),
                    Contains("holds a certificate") && Contains("openssl x509"));
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_pem("not a key"),
                    Contains("not a PEM file") && Contains("-inform DER"));
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_pem(
                        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
                    Contains("does not decode"));
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_pem(pem("rsa") + pem("rsa")),
                    Contains("holds 2 public keys"));
}

TEST_CASE("Weak RSA keys and unsupported curves are refused", "[auth][key]") {
  CHECK_THROWS_WITH(TokenKey::rsa_public_key_pem(pem("rsa_1024")),
                    Contains("has 1024 bits; at least 2048"));
  CHECK_THROWS_WITH(TokenKey::ecdsa_public_key_pem(pem("ec_secp256k1")),
                    Contains("curve secp256k1") && Contains("P-256, P-384 or P-521"));
}

TEST_CASE("A key is shared by copies and outlives the verifier that holds it", "[auth][key]") {
  ConnectionClaims c;
  std::optional<TokenVerifier> v;
  {
    TokenKey key = auth_test::key("ec256");
    TokenKey copy = key;
    v.emplace(copy);
  }
  CHECK(v->verify_connection(auth_test::token("es256_valid"), auth_test::now(), c).ok());
  CHECK(v->key().kind() == KeyKind::ecdsa_public);
}
