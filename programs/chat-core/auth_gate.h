// Identity and permission for the chat protocol (docs/chat-protocol.md,
// version 2): the glue between heartwheel::auth and the chat core that
// heartwheel-chat and heartwheel-push share.
//
//   chat::AuthFlags f;  chat::add_auth_flags(app, f);      // the flags, in main()
//   config.auth = chat::make_auth_settings(f);             // throws naming the flag
//   ... each Worker makes its AuthGate (one TokenVerifier per loop thread).
//
// AuthSettings (one per process, read-only while the workers run):
// - a token key (--token-hmac-secret-file, --token-rsa-public-key or
//   --token-ecdsa-public-key; at most one): authentication is on. The client's
//   first message must then be {"op":"connect","token":JWT}; a connection
//   that has not sent one within --connect-timeout is closed (3008), a bad
//   token or any other first message is answered `unauthorized` and closed
//   (3000); a token with `exp` closes the connection at exp + leeway (3000,
//   "token expired") unless a `refresh` brought a later one.
// - the channel policy (--channels-config, or the default "subscribe: user,
//   publish: subscriber" when a key is set): checked before subscribe,
//   publish, presence and history; a denial answers permission_denied (or
//   unknown_channel) and keeps the connection open.
// - the Origin rule of the WebSocket handshake (--allowed-origin; default:
//   any origin without a key, same host with one): a refused Origin gets 403.
// Without a key and without --channels-config make_auth_settings returns
// null: version 1 of the protocol, unchanged (any origin unless
// --allowed-origin is given).
//
// The deadlines: two kinds of this program's (below) on the connection's
// deadline set, the connect timeout until the connect and then the token's
// expiry; the WebSocket layer hands them to the Worker
// (ws::Application::on_deadline), which closes with 3008 or 3000 "token
// expired". Bounded like every deadline: the wheel fires due slots a
// bounded number per loop turn, so 100k tokens expiring in one second do not
// stall the loop.
//
// Threads: AuthSettings any thread (const); an AuthGate on its worker's loop
// thread only (the verifier keeps scratch state).
#pragma once

#include <heartwheel/auth/channel_policy.h>
#include <heartwheel/auth/claims.h>
#include <heartwheel/auth/origin_policy.h>
#include <heartwheel/auth/token_key.h>
#include <heartwheel/auth/token_verifier.h>
#include <heartwheel/common/time.h>
#include <heartwheel/http/message.h>
#include <heartwheel/net/names.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace chat {

// The connection's deadline kinds (heartwheel/net/names.h; numbers listed in
// lib/src/net/README.md, "Numbers taken"): the connect timeout until the
// connect, then the token's expiry (one of the two is set at a time). The
// WebSocket layer hands them to Worker::on_deadline (ws::Application), which
// closes with a WebSocket close frame (3008, 3000) and returns keep; the
// reasons below name the TCP close only if that close handshake is cut short
// by an application returning close instead.
namespace close_reason {
inline constexpr heartwheel::net::CloseReason connect_timeout{45};
inline constexpr heartwheel::net::CloseReason token_expired{46};
}  // namespace close_reason
namespace deadline {
inline constexpr heartwheel::net::Deadline connect_timeout{28};
inline constexpr heartwheel::net::Deadline token_expiry{30};
}  // namespace deadline
namespace detail {
inline constexpr heartwheel::net::CloseReasonName kAuthReasonNames[] = {
    {close_reason::connect_timeout, "connect_timeout"},
    {close_reason::token_expired, "token_expired"},
};
inline constexpr heartwheel::net::DeadlineName kAuthDeadlineNames[] = {
    {deadline::connect_timeout, "connect_timeout", close_reason::connect_timeout},
    {deadline::token_expiry, "token_expiry", close_reason::token_expired},
};
inline const heartwheel::net::NameRegistrar kAuthNames{kAuthReasonNames, kAuthDeadlineNames};
}  // namespace detail

// Close codes (docs/chat-protocol.md): a refused or expired token, and no
// connect in time.
inline constexpr std::uint16_t kCloseUnauthorized = 3000;
inline constexpr std::uint16_t kCloseConnectTimeout = 3008;

struct AuthFlags {
  std::string hmac_secret_file, rsa_public_key, ecdsa_public_key;
  std::string connect_timeout = "10s";
  std::string channels_config;
  std::vector<std::string> allowed_origins;
};

// Registers --token-hmac-secret-file, --token-rsa-public-key,
// --token-ecdsa-public-key, --connect-timeout, --channels-config and
// --allowed-origin (repeatable).
void add_auth_flags(CLI::App& app, AuthFlags& flags);

struct AuthSettings {
  std::optional<heartwheel::auth::TokenKey> key;  // set: authentication is on
  heartwheel::auth::ChannelPolicy policy;
  bool check_channels = false;  // a key or --channels-config: the policy applies
  heartwheel::auth::OriginPolicy origins;
  heartwheel::Duration connect_timeout = std::chrono::seconds(10);

  bool authenticating() const noexcept { return key.has_value(); }
};

// Loads the key and the channels config. Null when neither a key nor a
// channels config nor an origin pattern is given (protocol version 1).
// Throws std::invalid_argument naming the flag: two keys, a key file
// missing, empty, unreadable or of the wrong type, a bad channels config,
// a bad origin pattern, a connect timeout that is not positive.
std::shared_ptr<const AuthSettings> make_auth_settings(const AuthFlags& flags);

// --connect-timeout: how long a client that must connect first (with a
// token, or any Centrifugo client) may take. Throws std::invalid_argument
// naming the flag when it is not a positive duration.
heartwheel::Duration connect_timeout_of(const AuthFlags& flags);

// The handshake's Origin rule for `req` (a request for /ws or /echo): true
// when it has no Origin header or its origin is allowed. `settings` may be
// null (everything allowed).
bool origin_allowed(const AuthSettings* settings, const heartwheel::http::Request& req);

// One worker's verifier. Not copyable; loop thread only.
class AuthGate {
 public:
  explicit AuthGate(const AuthSettings& settings);

  const AuthSettings& settings() const noexcept { return settings_; }

  // A connection token. On success `claims` holds the token's claims and
  // `time_left` when it has `exp` or `expire_at` (the connection's remaining
  // life: expire_at's when given, 0 there meaning none).
  heartwheel::auth::Error verify_connection(std::string_view token,
                                            heartwheel::auth::ConnectionClaims& claims,
                                            std::optional<heartwheel::Duration>& time_left);
  // A subscription token for `channel`, issued to `user`. On success
  // `time_left` holds how long it stays valid when it has `exp`.
  heartwheel::auth::Error verify_subscription(std::string_view token, std::string_view user,
                                              std::string_view channel,
                                              std::optional<heartwheel::Duration>& time_left);
  // The verifier's tolerance for exp (time_left includes it); 0 without a key.
  heartwheel::Duration leeway() const noexcept;

 private:
  const AuthSettings& settings_;
  std::optional<heartwheel::auth::TokenVerifier> verifier_;  // when a key is set
};

// A client's presence and publication info with authentication on:
// {"client":ID,"user":SUB[,"info":INFO]} (INFO is the token's JSON text).
std::string user_info(std::string_view client_id, std::string_view user, std::string_view info);

}  // namespace chat
