// The AUTH command and its refusals (heartwheel/redis/auth.h).
#include <heartwheel/redis/auth.h>

#include <stdexcept>

namespace heartwheel::redis {

Command auth_command(std::string_view user, std::string_view password) {
  if (password.empty()) throw std::invalid_argument("redis: AUTH needs a password");
  if (user.empty()) return Command{"AUTH", password};
  return Command{"AUTH", user, password};
}

bool is_noauth(const Reply& reply) noexcept {
  // Redis's error replies begin with their code in capitals ("NOAUTH ...").
  return reply.is_error() && reply.str().starts_with("NOAUTH");
}

std::string auth_failure_detail(std::string_view address, std::string_view user,
                                std::string_view reason) {
  std::string out = "AUTH refused by ";
  out += address;
  if (user.empty()) {
    out += " for the default user: ";
  } else {
    out += " for user ";
    out += user;
    out += ": ";
  }
  out += reason;
  return out;
}

}  // namespace heartwheel::redis
