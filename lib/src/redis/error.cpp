// The Redis error category (heartwheel/redis/error.h).
#include <heartwheel/redis/error.h>

#include <string>

namespace heartwheel::redis {

namespace {
class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "redis"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::ok:
        return "success";
      case errc::not_connected:
        return "not connected to Redis (nothing sent; max_buffered is 0)";
      case errc::buffer_full:
        return "not connected to Redis and the command buffer is full (max_buffered)";
      case errc::stopped:
        return "the Redis client is stopped";
      case errc::not_allowed:
        return "command not allowed on a command link (it would break the reply order); "
               "use redis::Subscriber";
      case errc::disconnected:
        return "Redis connection lost before the reply (the command may or may not have run)";
      case errc::server_error:
        return "Redis answered with an error";
      case errc::not_replicated:
        return "the write ran on the Redis master but fewer replicas than wait_replicas "
               "acknowledged it within wait_timeout (WAIT): a failover may lose it";
      case errc::too_many_redirects:
        return "Redis Cluster redirected the command more than max_redirects times";
      case errc::auth_failed:
        return "Redis refused the link's credentials (AUTH), or wants some (NOAUTH)";
      case errc::already_locked:
        return "this Lock already holds or waits for that lock (locks are not reentrant)";
      case errc::lock_not_held:
        return "this Lock neither holds nor waits for that lock";
      case errc::lock_lost:
        return "the lock is no longer ours: its lease ran out, or another holder has it";
    }
    return "unknown redis error " + std::to_string(value);
  }
};
}  // namespace

const std::error_category& redis_category() noexcept {
  static const Category category;
  return category;
}

}  // namespace heartwheel::redis
