// heartwheel/auth/channel_policy.h - who may subscribe to, publish in, and
// read the history and presence of a channel, by namespace.
//
// The rules (the --channels-config contract):
//   {"namespaces": [{"name": "", "subscribe": "any|user|token",
//                    "publish": "none|user|subscriber",
//                    "history": true, "presence": true}, ...]}
//   A channel's namespace is its name up to the first ':' ("chat:lobby" is in
//   "chat"); a name without ':' is in "" (channel_name.h).
//   subscribe  any:  every connected client, anonymous ones included
//              user: every authenticated client (a token with a non-empty sub)
//              token: a client holding a valid subscription token for the
//                     channel (TokenVerifier::verify_subscription)
//   publish    none: no client (the server API still can)
//              user: every authenticated client
//              subscriber: clients subscribed to the channel
//   history, presence: true = readable by a client subscribed to the channel
//              or allowed to subscribe to it; false = by no client
//   User-limited channels ("dm:#alice,bob", channel_name.h): only the listed
//   users may subscribe, whatever the namespace's subscribe rule says, and
//   every other operation on the channel is refused to anyone else too.
//   A channel whose namespace is not listed: unknown_channel. A name that is
//   not a channel name: bad_channel.
// In a namespace object only "name" is required; the others default to
// subscribe "user", publish "subscriber", history true, presence true.
// Without a config (a default-constructed policy) every channel, in any
// namespace, has those defaults.
//
// Loading validates strictly (std::invalid_argument naming the file and the
// place, e.g. "channels.json: namespaces[2].subscribe: \"tokn\" is not one of
// any, user, token"): JSON syntax (with line and column), unknown or repeated
// keys, values of the wrong type or outside the enums, invalid or duplicate
// namespace names.
//
// Cost: a check is one scan of the name, one map lookup (O(log namespaces),
// no allocation) and a few comparisons; denials carry static text.
// Threads: immutable after construction; const calls from any thread.
#pragma once

#include <heartwheel/auth/error.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::auth {

enum class SubscribeRule { any, user, token };
enum class PublishRule { none, user, subscriber };

struct NamespaceRules {
  std::string name;  // "" = the default namespace
  SubscribeRule subscribe = SubscribeRule::user;
  PublishRule publish = PublishRule::subscriber;
  bool history = true;
  bool presence = true;
};

// Who asks, for one channel.
struct Access {
  std::string_view user;                // the connection's user; "" = anonymous
  bool has_subscription_token = false;  // a subscription token for this channel verified
  bool is_subscriber = false;           // the client is subscribed to this channel
};

// An answer: allowed (errc::ok) or the denial with a static reason.
struct Decision {
  errc code = errc::ok;  // ok, permission_denied, unknown_channel or bad_channel
  std::string_view reason;  // empty when allowed; static text otherwise

  bool allowed() const noexcept { return code == errc::ok; }
};

class ChannelPolicy {
 public:
  // No config: every channel has the default rules.
  ChannelPolicy();
  // Exactly these namespaces. Throws std::invalid_argument for an invalid
  // name (a ':' or '#', or a character channel names may not hold) or a
  // repeated one.
  explicit ChannelPolicy(std::vector<NamespaceRules> namespaces);

  // The config text (the contract above); `source` names it in errors.
  static ChannelPolicy from_json(std::string_view text,
                                 std::string_view source = "channels config");
  // The config file at `path` (errors name the path; a missing, unreadable or
  // empty file is refused too).
  static ChannelPolicy from_file(const std::string& path);

  Decision can_subscribe(std::string_view channel, const Access& who) const noexcept;
  Decision can_publish(std::string_view channel, const Access& who) const noexcept;
  Decision can_read_history(std::string_view channel, const Access& who) const noexcept;
  Decision can_read_presence(std::string_view channel, const Access& who) const noexcept;

  // The rules that apply to `channel` (a valid name), or nullptr when its
  // namespace is unknown.
  const NamespaceRules* rules_for(std::string_view channel) const noexcept;
  // False for a default-constructed policy (every namespace allowed).
  bool configured() const noexcept { return configured_; }
  // The configured namespaces, ordered by name.
  std::vector<NamespaceRules> namespaces() const;

 private:
  // The namespace's rules and the user list of `channel`, or a denial.
  Decision lookup(std::string_view channel, const Access& who,
                  const NamespaceRules*& rules) const noexcept;
  Decision can_read(std::string_view channel, const Access& who, bool history) const noexcept;

  bool configured_ = false;
  NamespaceRules defaults_;
  std::map<std::string, NamespaceRules, std::less<>> namespaces_;
};

// "any", "user", "token" / "none", "user", "subscriber".
std::string_view rule_name(SubscribeRule rule) noexcept;
std::string_view rule_name(PublishRule rule) noexcept;

}  // namespace heartwheel::auth
