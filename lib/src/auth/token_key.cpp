// Loading token keys: HMAC secrets and PEM public keys (token_key.h).
#include <heartwheel/auth/token_key.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/err.h>

#include <stdexcept>
#include <vector>

#include "key_data.h"
#include "key_file.h"

namespace heartwheel::auth {

namespace detail {

namespace {
constexpr std::array<std::string_view, 9> kAlgNames = {
    "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512"};
}

std::optional<Alg> parse_alg(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kAlgNames.size(); ++i)
    if (kAlgNames[i] == name) return static_cast<Alg>(i);
  return std::nullopt;
}

std::string_view alg_name(Alg alg) noexcept { return kAlgNames[static_cast<std::size_t>(alg)]; }

KeyKind alg_kind(Alg alg) noexcept {
  switch (static_cast<std::size_t>(alg) / 3) {
    case 0: return KeyKind::hmac_secret;
    case 1: return KeyKind::rsa_public;
    default: return KeyKind::ecdsa_public;
  }
}

KeyData::~KeyData() {
  if (!secret.empty()) OPENSSL_cleanse(secret.data(), secret.size());
  EVP_PKEY_free(pkey);
  EVP_MAC_free(hmac);
  for (EVP_MD* md : digests) EVP_MD_free(md);
}

}  // namespace detail

namespace {

using detail::KeyData;

constexpr std::size_t kMinSecretBytes = 32;  // RFC 7518 3.2: at least the hash size of HS256
constexpr int kMinRsaBits = 2048;

// The queued OpenSSL errors as text (and the queue emptied), for messages.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

std::shared_ptr<KeyData> new_key_data(KeyKind kind) {
  auto d = std::make_shared<KeyData>();
  d->kind = kind;
  constexpr const char* names[3] = {"SHA256", "SHA384", "SHA512"};
  for (std::size_t i = 0; i < 3; ++i) {
    d->digests[i] = EVP_MD_fetch(nullptr, names[i], nullptr);
    if (!d->digests[i])
      throw std::runtime_error(std::string("OpenSSL has no ") + names[i] + ": " +
                               openssl_errors());
  }
  if (kind == KeyKind::hmac_secret) {
    d->hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (!d->hmac) throw std::runtime_error("OpenSSL has no HMAC: " + openssl_errors());
  }
  return d;
}

bool looks_like_pem(std::string_view text) noexcept {
  return text.find("-----BEGIN ") != std::string_view::npos;
}

// The labels of the PEM blocks in `pem` ("PUBLIC KEY", "PRIVATE KEY", ...).
std::vector<std::string_view> pem_labels(std::string_view pem) {
  std::vector<std::string_view> labels;
  constexpr std::string_view begin = "-----BEGIN ";
  for (std::size_t at = pem.find(begin); at != std::string_view::npos;
       at = pem.find(begin, at + 1)) {
    const std::size_t start = at + begin.size();
    const std::size_t end = pem.find("-----", start);
    if (end == std::string_view::npos) break;
    labels.push_back(pem.substr(start, end - start));
  }
  return labels;
}

// Decodes the one public key in `pem`, after refusing what is not one.
// `source` names the text in messages ("RSA public key file k.pem").
EVP_PKEY* decode_public_key(std::string_view pem, const std::string& source) {
  const auto labels = pem_labels(pem);
  if (labels.empty())
    throw std::invalid_argument(
        source + ": not a PEM file (no \"-----BEGIN\" line); a DER key converts with "
                 "`openssl pkey -pubin -inform DER -in KEY.der -out KEY.pem`");
  for (std::string_view label : labels) {
    if (label.find("PRIVATE KEY") != std::string_view::npos)
      throw std::invalid_argument(
          source + ": holds a private key (\"" + std::string(label) +
          "\"); the server needs only the public key: `openssl pkey -in KEY.pem -pubout`, "
          "and keep the private key with the token issuer");
    if (label == "CERTIFICATE")
      throw std::invalid_argument(
          source + ": holds a certificate, not a public key; extract its key with "
                   "`openssl x509 -in CERT.pem -pubkey -noout`");
  }
  std::size_t keys = 0;
  for (std::string_view label : labels)
    if (label == "PUBLIC KEY" || label == "RSA PUBLIC KEY") ++keys;
  if (keys == 0)
    throw std::invalid_argument(source + ": no \"BEGIN PUBLIC KEY\" block (found \"" +
                                std::string(labels.front()) + "\")");
  if (keys > 1)
    throw std::invalid_argument(source + ": holds " + std::to_string(keys) +
                                " public keys; give exactly one");

  ERR_clear_error();
  EVP_PKEY* pkey = nullptr;
  OSSL_DECODER_CTX* dctx = OSSL_DECODER_CTX_new_for_pkey(
      &pkey, "PEM", nullptr, nullptr, EVP_PKEY_PUBLIC_KEY, nullptr, nullptr);
  if (!dctx) throw std::runtime_error("OpenSSL cannot make a key decoder: " + openssl_errors());
  const auto* data = reinterpret_cast<const unsigned char*>(pem.data());
  std::size_t len = pem.size();
  const int ok = OSSL_DECODER_from_data(dctx, &data, &len);
  OSSL_DECODER_CTX_free(dctx);
  if (!ok || !pkey) {
    EVP_PKEY_free(pkey);
    throw std::invalid_argument(source + ": the PEM public key does not decode (" +
                                openssl_errors() + ")");
  }
  return pkey;
}

std::string key_type_name(EVP_PKEY* pkey) {
  if (EVP_PKEY_is_a(pkey, "RSA")) return "an RSA key";
  if (EVP_PKEY_is_a(pkey, "RSA-PSS")) return "an RSA-PSS key";
  if (EVP_PKEY_is_a(pkey, "EC")) return "an EC key";
  if (EVP_PKEY_is_a(pkey, "ED25519")) return "an Ed25519 key";
  if (EVP_PKEY_is_a(pkey, "ED448")) return "an Ed448 key";
  if (const char* name = EVP_PKEY_get0_type_name(pkey)) return std::string("a ") + name + " key";
  return "a key of another type";
}

std::shared_ptr<KeyData> rsa_key(std::string_view pem, const std::string& source) {
  auto d = new_key_data(KeyKind::rsa_public);
  d->pkey = decode_public_key(pem, source);
  if (!EVP_PKEY_is_a(d->pkey, "RSA"))
    throw std::invalid_argument(source + ": holds " + key_type_name(d->pkey) +
                                ", not an RSA public key" +
                                (EVP_PKEY_is_a(d->pkey, "EC") ? " (load it as an ECDSA key)" : ""));
  d->bits = EVP_PKEY_get_bits(d->pkey);
  if (d->bits < kMinRsaBits)
    throw std::invalid_argument(source + ": the RSA key has " + std::to_string(d->bits) +
                                " bits; at least " + std::to_string(kMinRsaBits) +
                                " are required");
  return d;
}

std::shared_ptr<KeyData> ecdsa_key(std::string_view pem, const std::string& source) {
  auto d = new_key_data(KeyKind::ecdsa_public);
  d->pkey = decode_public_key(pem, source);
  if (!EVP_PKEY_is_a(d->pkey, "EC"))
    throw std::invalid_argument(source + ": holds " + key_type_name(d->pkey) +
                                ", not an EC public key" +
                                (EVP_PKEY_is_a(d->pkey, "RSA") ? " (load it as an RSA key)" : ""));
  char group[64] = {};
  std::size_t group_len = 0;
  if (!EVP_PKEY_get_utf8_string_param(d->pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                      &group_len))
    throw std::invalid_argument(source + ": the EC key names no curve (explicit curve "
                                         "parameters are not supported; use P-256)");
  const std::string_view g(group, group_len);
  if (g == "prime256v1" || g == "P-256") {
    d->ecdsa_alg = detail::Alg::ES256, d->ecdsa_coordinate_bytes = 32, d->curve = "P-256";
  } else if (g == "secp384r1" || g == "P-384") {
    d->ecdsa_alg = detail::Alg::ES384, d->ecdsa_coordinate_bytes = 48, d->curve = "P-384";
  } else if (g == "secp521r1" || g == "P-521") {
    d->ecdsa_alg = detail::Alg::ES512, d->ecdsa_coordinate_bytes = 66, d->curve = "P-521";
  } else {
    throw std::invalid_argument(source + ": the EC key is on curve " + std::string(g) +
                                "; JWS ES256/ES384/ES512 use P-256, P-384 or P-521");
  }
  d->bits = EVP_PKEY_get_bits(d->pkey);
  return d;
}

std::shared_ptr<KeyData> hmac_key(std::string_view secret, const std::string& source) {
  if (secret.empty()) throw std::invalid_argument(source + ": empty");
  if (looks_like_pem(secret))
    throw std::invalid_argument(
        source + ": holds a PEM key; an HMAC secret is shared random bytes (a public key used "
                 "as an HMAC secret is the algorithm-confusion attack); give a PEM public key "
                 "as an RSA or ECDSA key instead");
  if (secret.size() < kMinSecretBytes)
    throw std::invalid_argument(source + ": the secret is " + std::to_string(secret.size()) +
                                " bytes; HS256 needs at least " +
                                std::to_string(kMinSecretBytes) +
                                " (RFC 7518 3.2), e.g. `openssl rand -hex 32`");
  auto d = new_key_data(KeyKind::hmac_secret);
  d->secret.assign(secret);
  d->bits = static_cast<int>(secret.size() * 8);
  return d;
}

std::string file_source(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path;
}

// A PEM public key file, decoded by `load` (rsa_key or ecdsa_key).
template <class Load>
std::shared_ptr<KeyData> public_key_file(const std::string& path, std::string_view what,
                                         Load&& load) {
  const std::string text = detail::read_small_file(path, what);
  if (detail::trim_trailing_newlines(text).empty())
    throw std::invalid_argument(file_source(what, path) + ": empty");
  return load(text, file_source(what, path));
}

}  // namespace

TokenKey::TokenKey(std::shared_ptr<const KeyData> data) noexcept : data_(std::move(data)) {}

TokenKey TokenKey::hmac_secret(std::string_view secret) {
  return TokenKey(hmac_key(secret, "HMAC secret"));
}

TokenKey TokenKey::hmac_secret_file(const std::string& path) {
  std::string text = detail::read_small_file(path, "HMAC secret file");
  const std::string_view secret = detail::trim_trailing_newlines(text);
  std::shared_ptr<KeyData> d;
  try {
    d = hmac_key(secret, file_source("HMAC secret file", path));
  } catch (...) {
    OPENSSL_cleanse(text.data(), text.size());
    throw;
  }
  OPENSSL_cleanse(text.data(), text.size());
  return TokenKey(std::move(d));
}

TokenKey TokenKey::rsa_public_key_pem(std::string_view pem) {
  return TokenKey(rsa_key(pem, "RSA public key"));
}

TokenKey TokenKey::rsa_public_key_file(const std::string& path) {
  return TokenKey(public_key_file(path, "RSA public key file", rsa_key));
}

TokenKey TokenKey::ecdsa_public_key_pem(std::string_view pem) {
  return TokenKey(ecdsa_key(pem, "ECDSA public key"));
}

TokenKey TokenKey::ecdsa_public_key_file(const std::string& path) {
  return TokenKey(public_key_file(path, "ECDSA public key file", ecdsa_key));
}

KeyKind TokenKey::kind() const noexcept { return data_->kind; }

bool TokenKey::accepts(std::string_view alg) const noexcept {
  const auto a = detail::parse_alg(alg);
  if (!a || detail::alg_kind(*a) != data_->kind) return false;
  return data_->kind != KeyKind::ecdsa_public || *a == data_->ecdsa_alg;
}

std::string_view TokenKey::algorithms() const noexcept {
  switch (data_->kind) {
    case KeyKind::hmac_secret: return "HS256, HS384, HS512";
    case KeyKind::rsa_public: return "RS256, RS384, RS512";
    case KeyKind::ecdsa_public: return detail::alg_name(data_->ecdsa_alg);
  }
  return "";
}

std::string TokenKey::describe() const {
  switch (data_->kind) {
    case KeyKind::hmac_secret:
      return "HMAC secret (" + std::to_string(data_->secret.size()) + " bytes)";
    case KeyKind::rsa_public:
      return "RSA public key (" + std::to_string(data_->bits) + " bits)";
    case KeyKind::ecdsa_public: return "EC public key (" + data_->curve + ")";
  }
  return "key";
}

}  // namespace heartwheel::auth
