// What the auth tests share: the token vectors PyJWT made
// (tests/unit/auth_vectors.json, written by tests/unit/auth_vectors.py), the
// keys in them as TokenKeys, and a temporary directory for key files.
#pragma once

#include <heartwheel/auth/token_key.h>
#include <heartwheel/auth/token_verifier.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include <stdlib.h>

#ifndef HEARTWHEEL_AUTH_VECTORS
#error "the build defines HEARTWHEEL_AUTH_VECTORS as the path of tests/unit/auth_vectors.json"
#endif

namespace auth_test {

using heartwheel::auth::TokenKey;
using heartwheel::auth::WallTime;

inline const nlohmann::json& vectors() {
  static const nlohmann::json data = [] {
    std::ifstream in(HEARTWHEEL_AUTH_VECTORS);
    if (!in) FAIL("cannot read " HEARTWHEEL_AUTH_VECTORS);
    return nlohmann::json::parse(in);
  }();
  return data;
}

// The instant the vectors' times are relative to.
inline WallTime now() {
  return WallTime(std::chrono::seconds(vectors().at("now").get<std::int64_t>()));
}

inline const nlohmann::json& vector(const std::string& name) {
  for (const auto& v : vectors().at("vectors"))
    if (v.at("name") == name) return v;
  FAIL("no vector named " << name);
  throw std::logic_error("unreachable");
}

inline std::string token(const std::string& name) {
  return vector(name).at("token").get<std::string>();
}

inline std::string pem(const std::string& key_name) {
  const auto& keys = vectors().at("keys");
  if (keys.contains(key_name)) return keys.at(key_name).get<std::string>();
  return vectors().at("bad_keys").at(key_name).get<std::string>();
}

// The TokenKey a vector's "key" names: hmac, rsa, rsa_pkcs1, ec256, ec384, ec521.
inline TokenKey key(const std::string& key_name) {
  if (key_name == "hmac") return TokenKey::hmac_secret(pem("hmac"));
  if (key_name.rfind("rsa", 0) == 0) return TokenKey::rsa_public_key_pem(pem(key_name));
  return TokenKey::ecdsa_public_key_pem(pem(key_name));
}

inline heartwheel::auth::TokenVerifier verifier(const std::string& key_name,
                                                std::chrono::seconds leeway = std::chrono::seconds(5)) {
  heartwheel::auth::VerifierOptions options;
  options.leeway = leeway;
  return heartwheel::auth::TokenVerifier(key(key_name), options);
}

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/heartwheel-auth-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `text` to NAME in the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = path_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string path(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace auth_test
