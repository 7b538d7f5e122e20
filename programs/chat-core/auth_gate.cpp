// See auth_gate.h.
#include "auth_gate.h"

#include <CLI/CLI.hpp>
#include "cli_program.h"
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace chat {

namespace auth = heartwheel::auth;

void add_auth_flags(CLI::App& app, AuthFlags& f) {
  app.add_option("--token-hmac-secret-file", f.hmac_secret_file,
                 "turns authentication on: connection tokens are JWTs signed with HS256, HS384 "
                 "or HS512 and the secret in FILE (docs/chat-protocol.md, version 2)");
  app.add_option("--token-rsa-public-key", f.rsa_public_key,
                 "turns authentication on: tokens are RS256/384/512 JWTs, verified with the RSA "
                 "public key in FILE (PEM)");
  app.add_option("--token-ecdsa-public-key", f.ecdsa_public_key,
                 "turns authentication on: tokens are ES256/384/512 JWTs, verified with the EC "
                 "public key in FILE (PEM)");
  app.add_option("--connect-timeout", f.connect_timeout,
                 "a WebSocket that must connect first (with authentication on, or any Centrifugo "
                 "client at /connection/websocket) and has not by then is closed (code 3008; "
                 "Centrifugo's 3502)")
      ->capture_default_str();
  app.add_option("--channels-config", f.channels_config,
                 "JSON FILE of channel namespaces: who may subscribe, publish, read history and "
                 "presence (docs/chat-protocol.md); default with a token key: every channel "
                 "subscribe:user, publish:subscriber");
  app.add_option("--allowed-origin", f.allowed_origins,
                 "an Origin browsers may open WebSockets from (repeatable; '*', or "
                 "https://*.example.com); default: any without a token key, the same host with "
                 "one. Others get 403 at the handshake; a request without Origin is not refused");
}

std::shared_ptr<const AuthSettings> make_auth_settings(const AuthFlags& f) {
  const int keys = int(!f.hmac_secret_file.empty()) + int(!f.rsa_public_key.empty()) +
                   int(!f.ecdsa_public_key.empty());
  if (keys > 1)
    throw std::invalid_argument(
        "give one of --token-hmac-secret-file, --token-rsa-public-key, --token-ecdsa-public-key");
  if (keys == 0 && f.channels_config.empty() && f.allowed_origins.empty()) return nullptr;
  auto s = std::make_shared<AuthSettings>();
  const auto with_flag = [](const char* flag, auto&& load) {
    try {
      return load();
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string(flag) + ": " + e.what());
    }
  };
  if (!f.hmac_secret_file.empty())
    s->key = with_flag("--token-hmac-secret-file",
                       [&] { return auth::TokenKey::hmac_secret_file(f.hmac_secret_file); });
  if (!f.rsa_public_key.empty())
    s->key = with_flag("--token-rsa-public-key",
                       [&] { return auth::TokenKey::rsa_public_key_file(f.rsa_public_key); });
  if (!f.ecdsa_public_key.empty())
    s->key = with_flag("--token-ecdsa-public-key",
                       [&] { return auth::TokenKey::ecdsa_public_key_file(f.ecdsa_public_key); });
  if (!f.channels_config.empty())
    s->policy = with_flag("--channels-config",
                          [&] { return auth::ChannelPolicy::from_file(f.channels_config); });
  s->check_channels = s->key.has_value() || !f.channels_config.empty();
  s->origins = with_flag("--allowed-origin", [&] {
    return auth::OriginPolicy::for_server(f.allowed_origins, s->key.has_value());
  });
  s->connect_timeout = connect_timeout_of(f);
  return s;
}

heartwheel::Duration connect_timeout_of(const AuthFlags& f) {
  const heartwheel::Duration d =
      heartwheel::cli::parse_duration_flag("--connect-timeout", f.connect_timeout);
  if (d.count() <= 0) throw std::invalid_argument("--connect-timeout must be positive");
  return d;
}

bool origin_allowed(const AuthSettings* settings, const heartwheel::http::Request& req) {
  if (settings == nullptr) return true;
  const std::string* origin = req.header("Origin");
  if (origin == nullptr) return true;  // not a browser: this rule is about browsers
  const std::string* host = req.header("Host");
  return settings->origins.allows(*origin, host ? std::string_view(*host) : std::string_view());
}

namespace {
// Centrifugo's expire_at, when given, is when the connection (or
// subscription) ends, in place of exp; 0 (the epoch) is never.
std::optional<auth::WallTime> lives_until(const std::optional<auth::WallTime>& exp,
                                          const std::optional<auth::WallTime>& expire_at) {
  if (!expire_at) return exp;
  if (*expire_at == auth::WallTime{}) return std::nullopt;
  return expire_at;
}
}  // namespace

AuthGate::AuthGate(const AuthSettings& settings) : settings_(settings) {
  if (settings.key) verifier_.emplace(*settings.key);
}

auth::Error AuthGate::verify_connection(std::string_view token, auth::ConnectionClaims& claims,
                                        std::optional<heartwheel::Duration>& time_left) {
  if (!verifier_) return {auth::errc::wrong_algorithm, "no token key is configured"};
  const auth::WallTime now = std::chrono::system_clock::now();
  auth::Error e = verifier_->verify_connection(token, now, claims);
  if (e.ok()) time_left = verifier_->time_left(lives_until(claims.expires, claims.expire_at), now);
  return e;
}

auth::Error AuthGate::verify_subscription(std::string_view token, std::string_view user,
                                          std::string_view channel,
                                          std::optional<heartwheel::Duration>& time_left) {
  if (!verifier_) return {auth::errc::wrong_algorithm, "no token key is configured"};
  auth::SubscriptionClaims claims;
  const auth::WallTime now = std::chrono::system_clock::now();
  auth::Error e = verifier_->verify_subscription(token, now, user, channel, claims);
  if (e.ok()) time_left = verifier_->time_left(lives_until(claims.expires, claims.expire_at), now);
  return e;
}

heartwheel::Duration AuthGate::leeway() const noexcept {
  return verifier_ ? verifier_->options().leeway : heartwheel::Duration{};
}

std::string user_info(std::string_view client_id, std::string_view user, std::string_view info) {
  std::string out =
      nlohmann::json{{"client", std::string(client_id)}, {"user", std::string(user)}}.dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!info.empty()) {  // the token's info, JSON text the verifier checked
    out.pop_back();
    out += ",\"info\":";
    out += info;
    out += '}';
  }
  return out;
}

}  // namespace chat
