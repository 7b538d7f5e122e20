// heartwheel/auth/channel_name.h - what a channel name is, and the parts the
// permissions read from it.
//
// A channel name is 1 to 255 bytes of printable ASCII (0x21-0x7e) except the
// double quote and the backslash: the same rule as pubsub::validate_channel,
// so a name this layer allows is one the pub/sub layer takes, and it goes
// into JSON and logs unescaped.
//
//   "lobby"                 namespace ""          (no ':': the default namespace)
//   "chat:lobby"            namespace "chat"      (up to the first ':')
//   "dm:#alice,bob"         namespace "dm",   user-limited to alice and bob
//   "notes#42"              namespace "",     user-limited to 42
// User-limited: after the first '#', a comma-separated list of user ids; only
// those users may subscribe, whatever the namespace says (channel_policy.h).
// Threads: pure functions, any thread. Cost: one pass over the name.
#pragma once

#include <cstddef>
#include <string_view>

namespace heartwheel::auth {

inline constexpr std::size_t kMaxChannelBytes = 255;

// True for a name in the grammar above.
bool is_valid_channel_name(std::string_view channel) noexcept;

// True for a namespace name: "" (the default namespace) or channel-name
// characters without ':' and '#'.
bool is_valid_namespace_name(std::string_view name) noexcept;

struct ChannelParts {
  std::string_view name_space;  // "" for the default namespace
  bool user_limited = false;    // the name has a '#'
  std::string_view users;       // after the first '#': "alice,bob" (may be empty)
};

// The parts of `channel` (any string; validity is is_valid_channel_name's).
ChannelParts split_channel(std::string_view channel) noexcept;

// True if `user` is one of the comma-separated ids in `users`. The empty user
// (anonymous) is never in a list, and empty entries match nobody.
bool user_in_list(std::string_view users, std::string_view user) noexcept;

}  // namespace heartwheel::auth
