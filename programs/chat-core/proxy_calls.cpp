// The engine's calls to the application's backend (proxy.h): a connect
// without a token, a connection whose expiry passed (refresh), a subscribe
// without a channel token, every client publish, an RPC, a sub_refresh
// without a token. Each call holds its command's reply slot (so it counts in
// --max-requests-in-flight and the answer keeps its place in the order); a
// client gone by the time the backend answers is found gone by its key.
#include <heartwheel/net/connection.h>

#include <algorithm>

#include "client.h"
#include "protocol.h"
#include "proxy.h"
#include "worker.h"

namespace chat {

namespace {

using Json = nlohmann::json;

// The backend's JSON value `key` (or the base64 of JSON `b64key`) as JSON
// text; "" when neither is there.
std::string json_field(const Json& result, const char* key, const char* b64key) {
  if (const auto it = result.find(key); it != result.end() && !it->is_null())
    return it->dump(-1, ' ', false, Json::error_handler_t::replace);
  if (const auto it = result.find(b64key); it != result.end() && it->is_string())
    throw std::invalid_argument(std::string(b64key) + ": this server's clients speak JSON; send " +
                                key);
  return {};
}

// Seconds from now to the Unix time `at` (0: none).
std::optional<heartwheel::Duration> until(std::int64_t at) {
  if (at <= 0) return std::nullopt;
  return std::chrono::duration_cast<heartwheel::Duration>(
      std::chrono::system_clock::time_point(std::chrono::seconds(at)) -
      std::chrono::system_clock::now());
}

}  // namespace

Json Worker::proxy_request(const Client& client) const {
  Json b = {{"client", client.id()},
            {"transport", "websocket"},
            {"protocol", "json"},
            {"encoding", "json"}};
  if (client.connected() && identified()) b["user"] = std::string(client.user());
  if (const auto it = meta_.find(client.key()); it != meta_.end())
    b["meta"] = Json::parse(it->second, nullptr, false);
  return b;
}

const heartwheel::http::Headers& Worker::forwarded_headers(const Client& client) const {
  static const heartwheel::http::Headers kNone;
  const auto it = headers_.find(client.key());
  return it == headers_.end() ? kNone : it->second;
}

void Worker::proxy_connect(Client& client, const Command& cmd, const Reply& reply) {
  Json b = proxy_request(client);
  b["name"] = "";
  b["version"] = "";
  if (cmd.has_data) b["data"] = Json::parse(cmd.data, nullptr, false);
  proxies_->call(
      *proxies_->settings().connect, b.dump(), forwarded_headers(client),
      [this, key = client.key(), cmd, reply](ProxyReply r) {
        Client* c = pending_client(key);
        if (c == nullptr) return;  // gone meanwhile: its slot is dropped
        if (r.failure) return reply(std::move(*r.failure));
        try {
          const Json& res = r.result;
          const std::string user = res.value("user", std::string());
          if (!displayable_name(user))
            return reply(Failure{Fault::unauthorized,
                                 "the backend's user has control, separator or "
                                 "bidirectional characters",
                                 0});
          const std::string info = json_field(res, "info", "b64info");
          const std::optional<heartwheel::Duration> left =
              until(res.value("expire_at", std::int64_t{0}));
          if (left && left->count() <= 0)
            return reply(Failure{Fault::token_expired, "the backend's expire_at passed", 0});
          std::vector<std::string> channels;
          for (const Json& ch : res.value("channels", Json::array()))
            if (ch.is_string()) channels.push_back(ch.get<std::string>());
          if (const auto subs = res.find("subs"); subs != res.end() && subs->is_object())
            for (const auto& [name, options] : subs->items())
              if (std::find(channels.begin(), channels.end(), name) == channels.end())
                channels.push_back(name);
          if (const auto meta = res.find("meta"); meta != res.end() && !meta->is_null())
            meta_[key] = meta->dump();
          admit(*c, cmd, reply, user, user_info(c->id(), user, info), left, left, channels,
                json_field(res, "data", "b64data"));
        } catch (const std::exception& e) {
          reply(Failure{Fault::backend_down, e.what(), 0});
        }
      });
}

void Worker::proxy_refresh(Client& client) {
  // A slot that answers nothing holds the client for the call.
  ReplyTo hold;
  hold.op = Op::refresh;
  hold.server_side = true;
  const Reply done = reserve_reply(client, std::move(hold));
  proxies_->call(*proxies_->settings().refresh, proxy_request(client).dump(),
                 forwarded_headers(client), [this, key = client.key(), done](ProxyReply r) {
                   Client* c = pending_client(key);
                   done(Done{});
                   if (c == nullptr) return;
                   const Codec& codec = codec_of(c->protocol());
                   const auto close_with = [&](Failure f) {
                     const Response resp = codec.answer(ReplyTo{}, f);
                     if (resp.close_code != 0)
                       (void)c->ws().close(resp.close_code, resp.close_reason);
                   };
                   if (r.failure && r.failure->fault == Fault::backend_down) {
                     // Centrifugo's rule: a backend that cannot answer does not end the
                     // connection; ask again later.
                     c->ws().net().set_timeout(
                         deadline::token_expiry,
                         std::max<heartwheel::Duration>(std::chrono::seconds(5),
                                                        proxies_->settings().timeout));
                     return;
                   }
                   if (r.failure) return close_with(Failure{Fault::connection_expired, {}, 0});
                   const std::optional<heartwheel::Duration> left =
                       until(r.result.value("expire_at", std::int64_t{0}));
                   if (r.result.value("expired", false) || !left || left->count() <= 0)
                     return close_with(Failure{Fault::connection_expired, {}, 0});
                   c->ws().net().set_timeout(deadline::token_expiry, *left);
                 });
}

void Worker::proxy_subscribe(Client& client, const Command& cmd, const Reply& reply) {
  Json b = proxy_request(client);
  b["channel"] = cmd.channel;
  if (cmd.has_data) b["data"] = Json::parse(cmd.data, nullptr, false);
  proxies_->call(*proxies_->settings().subscribe, b.dump(), forwarded_headers(client),
                 [this, key = client.key(), cmd, reply](ProxyReply r) {
                   Client* c = pending_client(key);
                   if (c == nullptr) return;
                   if (r.failure) return reply(std::move(*r.failure));
                   std::string data;
                   try {
                     data = json_field(r.result, "data", "b64data");
                   } catch (const std::exception& e) {
                     return reply(Failure{Fault::backend_down, e.what(), 0});
                   }
                   const std::optional<heartwheel::Duration> ttl =
                       until(r.result.value("expire_at", std::int64_t{0}));
                   subscribe(*c, cmd, [reply, data, ttl](Answer a) {
                     if (auto* s = std::get_if<SubscribeAnswer>(&a)) {
                       s->data = data;
                       s->ttl = ttl;
                     }
                     reply(std::move(a));
                   });
                 });
}

void Worker::proxy_publish(Client& client, const Command& cmd, const Reply& reply) {
  if (!cmd.has_data)
    return reply(Failure{Fault::bad_request, "\"data\" is required (any JSON value)"});
  Json b = proxy_request(client);
  b["channel"] = cmd.channel;
  b["data"] = Json::parse(cmd.data, nullptr, false);
  proxies_->call(*proxies_->settings().publish, b.dump(), forwarded_headers(client),
                 [this, key = client.key(), cmd, reply](ProxyReply r) {
                   Client* c = pending_client(key);
                   if (c == nullptr) return;
                   if (r.failure) return reply(std::move(*r.failure));
                   Command rewritten = cmd;  // the backend may change what is published
                   try {
                     if (std::string data = json_field(r.result, "data", "b64data"); !data.empty())
                       rewritten.data = std::move(data);
                   } catch (const std::exception& e) {
                     return reply(Failure{Fault::backend_down, e.what(), 0});
                   }
                   publish(*c, rewritten, reply);
                 });
}

void Worker::proxy_rpc(Client& client, const Command& cmd, const Reply& reply) {
  Json b = proxy_request(client);
  b["method"] = cmd.method;
  if (cmd.has_data) b["data"] = Json::parse(cmd.data, nullptr, false);
  proxies_->call(*proxies_->settings().rpc, b.dump(), forwarded_headers(client),
                 [this, key = client.key(), reply](ProxyReply r) {
                   if (pending_client(key) == nullptr) return;
                   if (r.failure) return reply(std::move(*r.failure));
                   try {
                     reply(RpcAnswer{json_field(r.result, "data", "b64data")});
                   } catch (const std::exception& e) {
                     reply(Failure{Fault::backend_down, e.what(), 0});
                   }
                 });
}

void Worker::proxy_sub_refresh(Client& client, const Command& cmd, const Reply& reply) {
  Json b = proxy_request(client);
  b["channel"] = cmd.channel;
  proxies_->call(*proxies_->settings().sub_refresh, b.dump(), forwarded_headers(client),
                 [this, key = client.key(), reply](ProxyReply r) {
                   if (pending_client(key) == nullptr) return;
                   if (r.failure) return reply(std::move(*r.failure));
                   const std::optional<heartwheel::Duration> left =
                       until(r.result.value("expire_at", std::int64_t{0}));
                   if (r.result.value("expired", false) || (left && left->count() <= 0))
                     return reply(Failure{Fault::token_expired, "the backend says it expired", 0});
                   RefreshAnswer a;
                   a.ttl = left;
                   reply(std::move(a));
                 });
}

}  // namespace chat
