// Channel permissions by namespace (channel_policy.h); the config file is read
// in channel_config.cpp.
#include <heartwheel/auth/channel_name.h>
#include <heartwheel/auth/channel_policy.h>

#include <stdexcept>

namespace heartwheel::auth {

namespace {

constexpr Decision kAllowed{};

constexpr Decision deny(std::string_view reason) noexcept {
  return Decision{errc::permission_denied, reason};
}

}  // namespace

std::string_view rule_name(SubscribeRule rule) noexcept {
  switch (rule) {
    case SubscribeRule::any: return "any";
    case SubscribeRule::user: return "user";
    case SubscribeRule::token: return "token";
  }
  return "";
}

std::string_view rule_name(PublishRule rule) noexcept {
  switch (rule) {
    case PublishRule::none: return "none";
    case PublishRule::user: return "user";
    case PublishRule::subscriber: return "subscriber";
  }
  return "";
}

ChannelPolicy::ChannelPolicy() = default;

ChannelPolicy::ChannelPolicy(std::vector<NamespaceRules> namespaces) : configured_(true) {
  for (NamespaceRules& ns : namespaces) {
    if (!is_valid_namespace_name(ns.name))
      throw std::invalid_argument(
          "namespace \"" + ns.name +
          "\": a namespace name is printable ASCII without ':', '#', '\"' or '\\', "
          "at most 255 bytes (\"\" is the default namespace)");
    const std::string name = ns.name;
    if (!namespaces_.emplace(name, std::move(ns)).second)
      throw std::invalid_argument("namespace \"" + name + "\" is defined twice");
  }
}

const NamespaceRules* ChannelPolicy::rules_for(std::string_view channel) const noexcept {
  if (!configured_) return &defaults_;
  const auto it = namespaces_.find(split_channel(channel).name_space);
  return it == namespaces_.end() ? nullptr : &it->second;
}

std::vector<NamespaceRules> ChannelPolicy::namespaces() const {
  std::vector<NamespaceRules> out;
  out.reserve(namespaces_.size());
  for (const auto& [name, rules] : namespaces_) out.push_back(rules);
  return out;
}

Decision ChannelPolicy::lookup(std::string_view channel, const Access& who,
                               const NamespaceRules*& rules) const noexcept {
  if (!is_valid_channel_name(channel))
    return {errc::bad_channel,
            "a channel name is 1-255 bytes of printable ASCII without '\"' or '\\'"};
  rules = rules_for(channel);
  if (!rules) return {errc::unknown_channel, "the channel's namespace is not configured"};
  const ChannelParts parts = split_channel(channel);
  if (parts.user_limited && !user_in_list(parts.users, who.user))
    return deny("only the users listed after '#' in the channel name may use it");
  return kAllowed;
}

Decision ChannelPolicy::can_subscribe(std::string_view channel,
                                      const Access& who) const noexcept {
  const NamespaceRules* rules = nullptr;
  if (Decision d = lookup(channel, who, rules); !d.allowed()) return d;
  // A listed user of a user-limited channel needs nothing more.
  if (split_channel(channel).user_limited) return kAllowed;
  switch (rules->subscribe) {
    case SubscribeRule::any: return kAllowed;
    case SubscribeRule::user:
      return who.user.empty() ? deny("subscribing here needs an authenticated user") : kAllowed;
    case SubscribeRule::token:
      return who.has_subscription_token
                 ? kAllowed
                 : deny("subscribing here needs a subscription token for the channel");
  }
  return deny("unknown subscribe rule");
}

Decision ChannelPolicy::can_publish(std::string_view channel, const Access& who) const noexcept {
  const NamespaceRules* rules = nullptr;
  if (Decision d = lookup(channel, who, rules); !d.allowed()) return d;
  switch (rules->publish) {
    case PublishRule::none: return deny("clients may not publish in this namespace");
    case PublishRule::user:
      return who.user.empty() ? deny("publishing here needs an authenticated user") : kAllowed;
    case PublishRule::subscriber:
      return who.is_subscriber ? kAllowed
                               : deny("only subscribers of the channel may publish in it");
  }
  return deny("unknown publish rule");
}

Decision ChannelPolicy::can_read(std::string_view channel, const Access& who,
                                 bool history) const noexcept {
  const NamespaceRules* rules = nullptr;
  if (Decision d = lookup(channel, who, rules); !d.allowed()) return d;
  if (history ? !rules->history : !rules->presence)
    return deny(history ? "history is off in this namespace" : "presence is off in this namespace");
  if (who.is_subscriber) return kAllowed;
  return can_subscribe(channel, who);
}

Decision ChannelPolicy::can_read_history(std::string_view channel,
                                         const Access& who) const noexcept {
  return can_read(channel, who, true);
}

Decision ChannelPolicy::can_read_presence(std::string_view channel,
                                          const Access& who) const noexcept {
  return can_read(channel, who, false);
}

}  // namespace heartwheel::auth
