// The pub/sub error category, limits and channel-name rules (limits.h).
#include <heartwheel/pubsub/limits.h>

#include <stdexcept>
#include <string>

namespace heartwheel::pubsub {

namespace {
class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "pubsub"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::ok:
        return "success";
      case errc::empty_channel:
        return "empty channel name";
      case errc::channel_too_long:
        return "channel name longer than max_channel_length";
      case errc::bad_channel_character:
        return "channel name has a byte outside printable ASCII, or a quote or backslash";
      case errc::channel_limit:
        return "subscriber is on channel_limit channels already";
      case errc::already_subscribed:
        return "already subscribed to this channel";
      case errc::not_subscribed:
        return "not subscribed to this channel";
      case errc::data_too_large:
        return "publication data larger than max_data_bytes";
      case errc::wrong_hub:
        return "subscriber belongs to another hub (another loop)";
      case errc::too_many_channels:
        return "the server holds as many channels as it may (max_channels)";
      case errc::unavailable:
        return "the broker's store (Redis) is unavailable: not answered in time or down";
    }
    return "unknown pubsub error " + std::to_string(value);
  }
};
}  // namespace

const std::error_category& pubsub_category() noexcept {
  static const Category category;
  return category;
}

void Limits::validate() const {
  if (channel_limit == 0) throw std::invalid_argument("pubsub: channel_limit must be at least 1");
  if (max_channel_length == 0)
    throw std::invalid_argument("pubsub: max_channel_length must be at least 1");
  if (max_data_bytes == 0) throw std::invalid_argument("pubsub: max_data_bytes must be at least 1");
}

std::error_code validate_channel(std::string_view channel, const Limits& limits) noexcept {
  if (channel.empty()) return errc::empty_channel;
  if (channel.size() > limits.max_channel_length) return errc::channel_too_long;
  for (const char c : channel) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e || c == '"' || c == '\\') return errc::bad_channel_character;
  }
  return {};
}

}  // namespace heartwheel::pubsub
