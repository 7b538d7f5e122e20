// Who sent a request to heartwheel-push's HTTP API, as far as the API can
// tell: the id of the API key it authenticated with, and whether that key is
// an admin key. A push remembers its creator's key id; DELETE /publish/{id}
// removes it only for the same key id or an admin key (DelayedQueue::cancel
// with an owner). The key check itself (Authorization: apikey ...) belongs to
// the auth layer: until it fills this in, every request is the anonymous
// caller (empty key id, not admin), so every push has the empty owner and any
// caller that knows a push's id may cancel it: the id (122 random bits) is
// the capability.
#pragma once

#include <heartwheel/http/message.h>

#include <optional>
#include <string>
#include <string_view>

namespace pushsrv {

struct Caller {
  std::string key_id;  // empty: no key
  bool admin = false;
  // The owner a cancel must match: none for an admin (any owner).
  std::optional<std::string_view> cancel_owner() const {
    if (admin) return std::nullopt;
    return std::string_view(key_id);
  }
};

inline Caller caller_of(const heartwheel::http::Request&) { return Caller{}; }

}  // namespace pushsrv
