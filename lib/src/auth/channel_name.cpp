// Channel names and their parts (channel_name.h).
#include <heartwheel/auth/channel_name.h>

namespace heartwheel::auth {

bool is_valid_channel_name(std::string_view channel) noexcept {
  if (channel.empty() || channel.size() > kMaxChannelBytes) return false;
  for (const char c : channel) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

bool is_valid_namespace_name(std::string_view name) noexcept {
  if (name.empty()) return true;
  return is_valid_channel_name(name) && name.find_first_of(":#") == std::string_view::npos;
}

ChannelParts split_channel(std::string_view channel) noexcept {
  ChannelParts parts;
  const std::size_t hash = channel.find('#');
  const std::string_view head = channel.substr(0, hash);
  if (hash != std::string_view::npos) {
    parts.user_limited = true;
    parts.users = channel.substr(hash + 1);
  }
  // The namespace ends at the first ':' before the '#' ("a#b:c" is in "").
  const std::size_t colon = head.find(':');
  if (colon != std::string_view::npos) parts.name_space = head.substr(0, colon);
  return parts;
}

bool user_in_list(std::string_view users, std::string_view user) noexcept {
  if (user.empty()) return false;
  while (true) {
    const std::size_t comma = users.find(',');
    if (users.substr(0, comma) == user) return true;
    if (comma == std::string_view::npos) return false;
    users.remove_prefix(comma + 1);
  }
}

}  // namespace heartwheel::auth
