// The Worker's half of protocol version 2 (auth_gate.h, docs/chat-protocol.md):
// the connect, refresh, the permission checks before each channel operation,
// and the connection's auth deadline (connect timeout, then token expiry).
#include <heartwheel/auth/error.h>
#include <heartwheel/net/connection.h>

#include "client.h"
#include "protocol.h"
#include "worker.h"

namespace chat {

namespace auth = heartwheel::auth;
namespace net = heartwheel::net;
namespace ws = heartwheel::ws;

namespace {

std::string token_field(const nlohmann::json& req) {
  const auto t = req.find("token");
  return t != req.end() && t->is_string() ? t->get<std::string>() : std::string();
}

long long to_millis(heartwheel::Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

void Worker::connect(Client& client, std::string_view text) {
  ws::Connection& conn = client.ws;
  // Bounded like every request (worker.h's max_json_depth): this frame comes
  // before anything is known about the peer.
  heartwheel::cli::BoundedJson parsed =
      heartwheel::cli::parse_bounded_json(text, config_.max_json_depth);
  const Json req = parsed.status == heartwheel::cli::BoundedJson::Status::ok ? std::move(parsed.value)
                                                                             : Json();
  const bool object = req.is_object();
  const Json id = object && req.contains("id") ? req["id"] : Json(nullptr);
  const auto refuse = [&](std::string_view message) {
    (void)conn.send_text(error(id, "unauthorized", message));
    (void)conn.close(kCloseUnauthorized, "unauthorized");
  };
  ++stats_.requests["connect"];
  if (!object || req.value("op", Json()) != "connect")
    return refuse("the first message must be {\"op\":\"connect\",\"token\":JWT}");
  auth::ConnectionClaims claims;
  std::optional<heartwheel::Duration> left;
  if (const auth::Error e = auth_->verify_connection(token_field(req), claims, left); !e.ok())
    return refuse(e.message);
  if (!displayable_name(claims.user))
    return refuse("the token's sub contains control, separator or bidirectional characters");
  if (left && left->count() <= 0) return refuse("the token expired");

  client.set_user(claims.user, user_info(client.id(), claims.user, claims.info));
  conn.net().clear_deadline(deadline::connect_timeout);
  if (left) conn.net().set_timeout(deadline::token_expiry, *left);
  Json reply = {{"client", client.id()},
                {"user", claims.user},
                {"worker", index_},
                {"ping_interval_ms", to_millis(config_.ws.ping_interval)}};
  if (left) reply["expires_in_ms"] = to_millis(*left);
  (void)conn.send_text(ok_reply(id, ",\"connect\":" + reply.dump()));

  // Server-side subscriptions (the token's `channels`): no reply, the
  // publications come as pushes; a channel the hub refuses is skipped.
  // Each gets a reply slot (so it is ordered with the requests that follow)
  // whose reply is not sent.
  for (const std::string& channel : claims.channels) {
    const Reply silent = reserve_reply(client);
    subscribe(client, nullptr, channel, Json::object(),
              [silent](const std::string&) { silent(std::string()); });
  }
}

void Worker::refresh(Client& client, const Json& id, const Json& req, const Reply& reply) {
  auth::ConnectionClaims claims;
  std::optional<heartwheel::Duration> left;
  auth::Error e = auth_->verify_connection(token_field(req), claims, left);
  if (e.ok() && claims.user != client.user())
    e = {auth::errc::wrong_user, "the token's sub is not the connection's user"};
  if (e.ok() && left && left->count() <= 0) e = {auth::errc::expired, "the token expired"};
  if (!e.ok()) {
    reply(error(id, "unauthorized", e.message));
    (void)client.ws.close(kCloseUnauthorized, "unauthorized");
    return;
  }
  net::Connection& conn = client.ws.net();
  if (left)
    conn.set_timeout(deadline::token_expiry, *left);
  else
    conn.clear_deadline(deadline::token_expiry);
  reply(ok_reply(id, left ? ",\"expires_in_ms\":" + std::to_string(to_millis(*left)) : ""));
}

bool Worker::permitted(Client& client, const Json& id, const std::string& op,
                       const std::string& channel, const Json& req, const Reply& reply) {
  if (!auth_ || !auth_->settings().check_channels) return true;
  auth::Access who;
  who.user = auth_->settings().authenticating() ? client.user() : std::string_view();
  who.is_subscriber = hub_->subscribed(client, channel);
  const auth::ChannelPolicy& policy = auth_->settings().policy;
  auth::Decision d;
  if (op == "subscribe") {
    if (const std::string token = token_field(req); !token.empty()) {
      const auth::Error e = auth_->verify_subscription(token, who.user, channel);
      if (!e.ok()) {
        reply(error(id, "permission_denied", "subscription token: " + e.message));
        return false;
      }
      who.has_subscription_token = true;
    }
    d = policy.can_subscribe(channel, who);
  } else if (op == "publish") {
    d = policy.can_publish(channel, who);
  } else if (op == "presence") {
    d = policy.can_read_presence(channel, who);
  } else if (op == "history") {
    d = policy.can_read_history(channel, who);
  } else {
    return true;  // unsubscribe: always allowed
  }
  if (d.allowed()) return true;
  reply(error(id, auth::code_name(d.code), d.reason));
  return false;
}

net::DeadlineAction Worker::on_deadline(ws::Connection& conn, net::DeadlineEvent event) {
  auto* client = static_cast<Client*>(conn.user_data());
  if (client == nullptr || !auth_) return net::DeadlineAction::close;
  if (event.kind == deadline::token_expiry) {
    ++stats_.errors["token_expired"];
    (void)conn.close(kCloseUnauthorized, "token expired");
  } else if (event.kind == deadline::connect_timeout) {
    ++stats_.errors["connect_timeout"];
    (void)conn.close(kCloseConnectTimeout, "no connect in time");
  } else {
    return net::DeadlineAction::close;  // the server's idle policy, max age, ...
  }
  return net::DeadlineAction::keep;  // the close handshake has its own timeout
}

}  // namespace chat
