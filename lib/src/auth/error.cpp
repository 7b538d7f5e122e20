// The auth error category and the codes' stable names (error.h).
#include <heartwheel/auth/error.h>

namespace heartwheel::auth {

namespace {
class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "auth"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::ok: return "success";
      case errc::missing_token: return "no token";
      case errc::malformed: return "malformed token";
      case errc::bad_signature: return "bad token signature";
      case errc::wrong_algorithm: return "token algorithm not accepted";
      case errc::expired: return "token expired";
      case errc::not_yet_valid: return "token not yet valid";
      case errc::wrong_channel: return "subscription token for another channel";
      case errc::wrong_user: return "subscription token for another user";
      case errc::permission_denied: return "permission denied";
      case errc::unknown_channel: return "unknown channel namespace";
      case errc::bad_channel: return "bad channel name";
    }
    return "unknown auth error " + std::to_string(value);
  }
};
}  // namespace

const std::error_category& auth_category() noexcept {
  static const Category category;
  return category;
}

std::string_view code_name(errc e) noexcept {
  switch (e) {
    case errc::ok: return "ok";
    case errc::missing_token: return "missing_token";
    case errc::malformed: return "malformed";
    case errc::bad_signature: return "bad_signature";
    case errc::wrong_algorithm: return "wrong_algorithm";
    case errc::expired: return "expired";
    case errc::not_yet_valid: return "not_yet_valid";
    case errc::wrong_channel: return "wrong_channel";
    case errc::wrong_user: return "wrong_user";
    case errc::permission_denied: return "permission_denied";
    case errc::unknown_channel: return "unknown_channel";
    case errc::bad_channel: return "bad_channel";
  }
  return "unknown";
}

}  // namespace heartwheel::auth
