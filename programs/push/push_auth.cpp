// See push_auth.h.
#include "push_auth.h"

#include <optional>
#include <stdexcept>
#include <string>

namespace pushsrv {

namespace auth = heartwheel::auth;

namespace {
// A token parameter, decoded; a malformed escape reads as no token (the
// request is then refused as one without).
std::optional<std::string> query_value_or_empty(const heartwheel::http::Request& req,
                                                std::string_view key) {
  try {
    return req.query_value(key);
  } catch (const std::invalid_argument&) {
    return std::string();
  }
}
}  // namespace

PushAuth::PushAuth(const auth::ApiKey* api_key, const chat::AuthSettings* settings)
    : api_key_(api_key), settings_(settings) {
  if (settings != nullptr && settings->authenticating())
    gate_ = std::make_unique<chat::AuthGate>(*settings);
}

std::optional<ApiError> PushAuth::check_publish(const heartwheel::http::Request& req) const {
  if (api_key_ == nullptr) return std::nullopt;
  // Centrifugo's clients send X-API-Key: KEY; ours Authorization: apikey KEY.
  if (const std::string* key = req.header("X-API-Key"))
    return api_key_->matches(*key)
               ? std::nullopt
               : std::optional<ApiError>(ApiError{401, "unauthorized", "wrong API key"});
  const std::string* header = req.header("Authorization");
  if (header == nullptr)
    return ApiError{401, "unauthorized",
                    "this API needs the header Authorization: apikey KEY (or X-API-Key: KEY)"};
  const auto presented = auth::parse_apikey_authorization(*header);
  if (!presented || !api_key_->matches(*presented))
    return ApiError{401, "unauthorized", "wrong API key"};
  return std::nullopt;
}

std::optional<ApiError> PushAuth::check_sse(const heartwheel::http::Request& req,
                                            std::string_view channel,
                                            std::optional<heartwheel::Duration>& expires_in) {
  expires_in.reset();
  if (settings_ == nullptr || !settings_->check_channels) return std::nullopt;
  std::string user;
  if (gate_) {
    const auto token = query_value_or_empty(req, "token");
    if (!token || token->empty())
      return ApiError{401, "unauthorized", "GET /sse?channel=C&token=JWT: a token is required"};
    auth::ConnectionClaims claims;
    if (const auth::Error e = gate_->verify_connection(*token, claims, expires_in); !e.ok())
      return ApiError{401, "unauthorized", e.message};
    user = std::move(claims.user);
  }
  auth::Access who;
  who.user = user;
  if (const auto sub = query_value_or_empty(req, "subscription_token"); sub && !sub->empty()) {
    std::optional<heartwheel::Duration> left;  // the stream ends with the connection token
    const auth::Error e = gate_ ? gate_->verify_subscription(*sub, user, channel, left)
                                : auth::Error{auth::errc::wrong_algorithm, "no token key"};
    if (!e.ok()) return ApiError{403, "permission_denied", "subscription token: " + e.message};
    who.has_subscription_token = true;
  }
  const auth::Decision d = settings_->policy.can_subscribe(channel, who);
  if (d.allowed()) return std::nullopt;
  expires_in.reset();
  return ApiError{403, std::string(auth::code_name(d.code)), std::string(d.reason)};
}

}  // namespace pushsrv
