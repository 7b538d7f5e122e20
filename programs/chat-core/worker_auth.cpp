// The Worker's identity and permission (auth_gate.h): the connect (a token,
// or anonymous without a token key), refresh and channel tokens, the
// permission checks before each channel operation, and the connection's auth
// deadlines (connect timeout, then token expiry). One engine for both
// protocols: their codecs name the failures (ours: unauthorized and close
// 3000; Centrifugo's: close 3500 for a refused token, error 109 for an
// expired one).
#include <heartwheel/auth/error.h>
#include <heartwheel/net/connection.h>

#include <algorithm>

#include "client.h"
#include "protocol.h"
#include "worker.h"

namespace chat {

namespace auth = heartwheel::auth;
namespace net = heartwheel::net;
namespace ws = heartwheel::ws;

namespace {

// A token refused: expired is its own fault (Centrifugo's clients then ask
// for a new one), anything else is unauthorized.
Failure token_failure(const auth::Error& e) {
  return {e.code == auth::errc::expired ? Fault::token_expired : Fault::unauthorized, e.message, 0};
}

// History or presence read in a namespace that has it off (its config's
// "history"/"presence": false): an operation the channel lacks, not a
// permission (Centrifugo's 108 not available; ours still answers
// permission_denied, chat_error_code).
bool read_off(const auth::ChannelPolicy& policy, const Command& cmd) noexcept {
  const bool history = cmd.op == Op::history;
  if (!history && cmd.op != Op::presence && cmd.op != Op::presence_stats) return false;
  const auth::NamespaceRules* rules = policy.rules_for(cmd.channel);
  return rules != nullptr && !(history ? rules->history : rules->presence);
}

}  // namespace

void Worker::connect(Client& client, const Command& cmd, const Reply& reply) {
  // Without a token the application's backend says who the client is.
  if (cmd.token.empty() && proxying(&ProxySettings::connect))
    return proxy_connect(client, cmd, reply);
  if (!authenticating()) {
    // No token key (Centrifugo's clients; ours speaks version 1 and has no
    // connect): the client is who ?name= says, as on /ws.
    return admit(client, cmd, reply, {}, {}, std::nullopt, std::nullopt, {}, {});
  }
  auth::ConnectionClaims claims;
  std::optional<heartwheel::Duration> left;
  if (const auth::Error e = auth_->verify_connection(cmd.token, claims, left); !e.ok())
    return reply(token_failure(e));
  if (!displayable_name(claims.user))
    return reply(
        Failure{Fault::unauthorized,
                "the token's sub contains control, separator or bidirectional characters"});
  if (left && left->count() <= 0) return reply(Failure{Fault::token_expired, "the token expired"});
  std::optional<heartwheel::Duration> ttl;
  if (left) ttl = *left - auth_->leeway();
  // Server-side subscriptions: the token's `channels` and the keys of `subs`.
  std::vector<std::string> channels = std::move(claims.channels);
  for (std::string& c : claims.subs)
    if (std::find(channels.begin(), channels.end(), c) == channels.end())
      channels.push_back(std::move(c));
  if (!claims.meta.empty()) meta_[client.key()] = std::move(claims.meta);
  admit(client, cmd, reply, claims.user, user_info(client.id(), claims.user, claims.info), left,
        ttl, channels, {});
}

void Worker::admit(Client& client, const Command& cmd, const Reply& reply, std::string_view user,
                   std::string info, std::optional<heartwheel::Duration> left,
                   std::optional<heartwheel::Duration> ttl,
                   const std::vector<std::string>& channels, std::string data) {
  (void)cmd;
  ws::Connection& conn = client.ws();
  ConnectAnswer a;
  a.client = client.id();
  a.name = client.name();
  if (info.empty()) {
    // Without tokens: the name the client gave (?name=), kept in its info
    // when join/leave events need it (as on /ws); else a bit marks it
    // connected and info() is made when asked.
    if (config_.presence_events)
      client.keep_info();
    else
      client.mark_connected();
  } else {
    client.set_user(user, std::move(info));
  }
  conn.net().clear_deadline(deadline::connect_timeout);
  if (left) conn.net().set_timeout(deadline::token_expiry, *left);
  a.user = std::string(user);
  a.worker = index_;
  a.ping_interval = config_.ws.ping_interval;
  a.expires_in = left;
  a.ttl = ttl;
  a.data = std::move(data);
  reply(std::move(a));

  // Server-side subscriptions (the token's `channels`): ours sends no reply
  // (the publications come as pushes), Centrifugo's a subscribe push; a
  // channel the hub refuses is skipped. Each gets a reply slot, so it is
  // ordered with the commands that follow.
  for (const std::string& channel : channels) {
    Command sub;
    sub.op = Op::subscribe;
    sub.channel = channel;
    sub.server_side = true;
    ReplyTo to;
    to.op = Op::subscribe;
    to.id = nullptr;
    to.channel = channel;
    to.server_side = true;
    subscribe(client, sub, reserve_reply(client, std::move(to)));
  }
}

void Worker::refresh(Client& client, const Command& cmd, const Reply& reply) {
  if (!authenticating())
    return reply(Failure{Fault::not_available, "this server has no token key to refresh"});
  auth::ConnectionClaims claims;
  std::optional<heartwheel::Duration> left;
  auth::Error e = auth_->verify_connection(cmd.token, claims, left);
  if (e.ok() && claims.user != client.user())
    e = {auth::errc::wrong_user, "the token's sub is not the connection's user"};
  if (e.ok() && left && left->count() <= 0) e = {auth::errc::expired, "the token expired"};
  if (!e.ok()) return reply(token_failure(e));
  net::Connection& conn = client.ws().net();
  if (left)
    conn.set_timeout(deadline::token_expiry, *left);
  else
    conn.clear_deadline(deadline::token_expiry);
  RefreshAnswer a;
  a.client = client.id();
  a.expires_in = left;
  if (left) a.ttl = *left - auth_->leeway();
  reply(std::move(a));
}

void Worker::sub_refresh(Client& client, const Command& cmd, const Reply& reply) {
  if (!authenticating())
    return reply(Failure{Fault::not_available, "this server has no token key to refresh"});
  if (!hub_->subscribed(client, cmd.channel))
    return reply(Failure{Fault::not_subscribed, "not subscribed to " + cmd.channel});
  std::optional<heartwheel::Duration> left;
  if (const auth::Error e = auth_->verify_subscription(cmd.token, client.user(), cmd.channel, left);
      !e.ok())
    return reply(e.code == auth::errc::expired ? Failure{Fault::token_expired, e.message, 0}
                                               : Failure{Fault::permission_denied, e.message, 0});
  RefreshAnswer a;
  if (left) a.ttl = *left - auth_->leeway();
  reply(std::move(a));
}

std::optional<Failure> Worker::refused(Client& client, const Command& cmd) {
  if (!auth_ || !auth_->settings().check_channels) return std::nullopt;
  auth::Access who;
  who.user = identified() ? client.user() : std::string_view();
  who.is_subscriber = hub_->subscribed(client, cmd.channel);
  const auth::ChannelPolicy& policy = auth_->settings().policy;
  auth::Decision d;
  switch (cmd.op) {
    case Op::subscribe:
      if (!cmd.token.empty()) {
        std::optional<heartwheel::Duration> left;
        const auth::Error e = auth_->verify_subscription(cmd.token, who.user, cmd.channel, left);
        if (!e.ok())
          return Failure{
              e.code == auth::errc::expired ? Fault::token_expired : Fault::permission_denied,
              "subscription token: " + e.message, 0};
        who.has_subscription_token = true;
      }
      d = policy.can_subscribe(cmd.channel, who);
      break;
    case Op::publish:
      d = policy.can_publish(cmd.channel, who);
      break;
    case Op::presence:
    case Op::presence_stats:
      d = policy.can_read_presence(cmd.channel, who);
      break;
    case Op::history:
      d = policy.can_read_history(cmd.channel, who);
      break;
    default:
      return std::nullopt;  // unsubscribe: always allowed
  }
  if (d.allowed()) return std::nullopt;
  if (read_off(policy, cmd)) return Failure{Fault::not_available, std::string(d.reason), 0};
  const Fault f = d.code == auth::errc::unknown_channel ? Fault::unknown_channel
                  : d.code == auth::errc::bad_channel   ? Fault::bad_channel
                                                        : Fault::permission_denied;
  return Failure{f, std::string(d.reason), 0};
}

net::DeadlineAction Worker::on_deadline(ws::Connection& conn, net::DeadlineEvent event) {
  Client* client = Client::of(conn);
  if (client == nullptr) return net::DeadlineAction::close;
  Fault fault;
  if (event.kind == deadline::token_expiry) {
    if (proxying(&ProxySettings::refresh)) {  // the backend may extend it
      proxy_refresh(*client);
      return net::DeadlineAction::keep;
    }
    fault = Fault::connection_expired;
  } else if (event.kind == deadline::connect_timeout) {
    fault = Fault::connect_timeout;
  } else {
    return net::DeadlineAction::close;  // the server's idle policy, max age, ...
  }
  ++stats_.errors[std::string(fault_name(fault))];
  ReplyTo to;
  to.op = Op::connect;
  const Response r = codec_of(client->protocol()).answer(to, Failure{fault, {}, 0});
  (void)conn.close(r.close_code, r.close_reason);
  return net::DeadlineAction::keep;  // the close handshake has its own timeout
}

}  // namespace chat
