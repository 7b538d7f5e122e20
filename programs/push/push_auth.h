// Who may use heartwheel-push's HTTP API (issue 22; README.md, "Access"):
// - POST /publish and DELETE /publish/{id} need `Authorization: apikey KEY`
//   when --api-key-file is given (compared in constant time; else 401);
// - GET /sse?channel=c with a token key needs &token=JWT (a connection
//   token: EventSource cannot send headers), then the channel rules of
//   heartwheel-chat's subscribe (--channels-config), with
//   &subscription_token=JWT for a channel whose namespace asks for one.
// /ws is heartwheel-chat's protocol, version 2 (programs/chat-core).
//
// One per worker (a token verifier keeps scratch state): loop thread only.
#pragma once

#include <heartwheel/auth/api_key.h>
#include <heartwheel/http/message.h>

#include <memory>
#include <optional>
#include <string_view>

#include "api.h"
#include "auth_gate.h"

namespace pushsrv {

class PushAuth {
 public:
  // `api_key` null: the publish API is open. `settings` null: SSE is open.
  PushAuth(const heartwheel::auth::ApiKey* api_key, const chat::AuthSettings* settings);

  // POST/DELETE /publish: nullopt when allowed, else the 401 refusal.
  std::optional<ApiError> check_publish(const heartwheel::http::Request& req) const;
  // GET /sse for `channel`: nullopt when allowed, else 401 (no or bad
  // token) or 403 (permission_denied, unknown_channel). When allowed,
  // `expires_in` is the connection token's time left (its `exp`), nullopt
  // when the token has none or none was needed: the stream ends then.
  std::optional<ApiError> check_sse(const heartwheel::http::Request& req,
                                    std::string_view channel,
                                    std::optional<heartwheel::Duration>& expires_in);

 private:
  const heartwheel::auth::ApiKey* api_key_;
  const chat::AuthSettings* settings_;
  std::unique_ptr<chat::AuthGate> gate_;  // with a token key
};

}  // namespace pushsrv
