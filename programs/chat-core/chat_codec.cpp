// Our protocol (docs/chat-protocol.md) as a Codec: one JSON request per text
// frame, `op` names it, replies carry `ok` or `error` with a code name. Every
// error leaves the connection open, except a refused connect or refresh
// (version 2: "unauthorized", then close 3000) and the auth deadlines.
#include <heartwheel/pubsub/limits.h>

#include "auth_gate.h"
#include "bounded_json.h"
#include "codec.h"
#include "protocol.h"

namespace chat {

std::string_view op_name(Op op) noexcept {
  switch (op) {
    case Op::connect:
      return "connect";
    case Op::subscribe:
      return "subscribe";
    case Op::unsubscribe:
      return "unsubscribe";
    case Op::publish:
      return "publish";
    case Op::presence:
      return "presence";
    case Op::presence_stats:
      return "presence_stats";
    case Op::history:
      return "history";
    case Op::refresh:
      return "refresh";
    case Op::sub_refresh:
      return "sub_refresh";
    case Op::rpc:
      return "rpc";
    case Op::send:
      return "send";
    case Op::ping:
      return "ping";
  }
  return "unknown";
}

std::string_view fault_name(Fault fault) noexcept {
  switch (fault) {
    case Fault::bad_json:
      return "bad_json";
    case Fault::too_deep:
      return "too_deep";
    case Fault::bad_request:
      return "bad_request";
    case Fault::unknown_op:
      return "unknown_op";
    case Fault::requests_in_flight:
    case Fault::rate_limited:
    case Fault::limit_exceeded:
      return "limit_exceeded";
    case Fault::empty_channel:
      return "empty_channel";
    case Fault::bad_channel:
      return "bad_channel";
    case Fault::channel_too_long:
      return "channel_too_long";
    case Fault::bad_channel_character:
      return "bad_channel_character";
    case Fault::channel_limit:
      return "channel_limit";
    case Fault::already_subscribed:
      return "already_subscribed";
    case Fault::not_subscribed:
      return "not_subscribed";
    case Fault::data_too_large:
      return "data_too_large";
    case Fault::unavailable:
      return "unavailable";
    case Fault::internal:
      return "internal";
    case Fault::unauthorized:
      return "unauthorized";
    case Fault::token_expired:
      return "token_expired";
    case Fault::permission_denied:
      return "permission_denied";
    case Fault::unknown_channel:
      return "unknown_channel";
    case Fault::not_available:
      return "not_available";
    case Fault::method_not_found:
      return "method_not_found";
    case Fault::unrecoverable_position:
      return "unrecoverable_position";
    case Fault::connect_timeout:
      return "connect_timeout";
    case Fault::connection_expired:
      return "token_expired";
    case Fault::backend_down:
      return "backend_down";
    case Fault::backend_error:
      return "backend_error";
    case Fault::backend_disconnect:
      return "backend_disconnect";
  }
  return "internal";
}

Fault fault_of(const std::error_code& ec) noexcept {
  namespace pubsub = heartwheel::pubsub;

  if (ec.category() != pubsub::pubsub_category()) return Fault::internal;
  switch (static_cast<pubsub::errc>(ec.value())) {
    case pubsub::errc::empty_channel:
      return Fault::empty_channel;
    case pubsub::errc::channel_too_long:
      return Fault::channel_too_long;
    case pubsub::errc::bad_channel_character:
      return Fault::bad_channel_character;
    case pubsub::errc::channel_limit:
      return Fault::channel_limit;
    case pubsub::errc::already_subscribed:
      return Fault::already_subscribed;
    case pubsub::errc::not_subscribed:
      return Fault::not_subscribed;
    case pubsub::errc::data_too_large:
      return Fault::data_too_large;
    case pubsub::errc::unavailable:
      return Fault::unavailable;
    case pubsub::errc::too_many_channels:
      return Fault::limit_exceeded;
    default:
      return Fault::internal;
  }
}

namespace {

using Json = nlohmann::json;
namespace pubsub = heartwheel::pubsub;

// A non-negative integer field, or nullopt when absent; throws
// std::invalid_argument (a bad_request) when present and not one.
std::optional<std::uint64_t> count_field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  throw std::invalid_argument(std::string("\"") + key + "\" must be a non-negative integer");
}

std::string string_field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<Op> op_of(std::string_view name) noexcept {
  if (name == "subscribe") return Op::subscribe;
  if (name == "unsubscribe") return Op::unsubscribe;
  if (name == "publish") return Op::publish;
  if (name == "presence") return Op::presence;
  if (name == "history") return Op::history;
  if (name == "connect") return Op::connect;
  if (name == "refresh") return Op::refresh;
  return std::nullopt;
}

// The fields of `req` for `c.op`; throws std::invalid_argument naming the
// one that is wrong.
void read_fields(const Json& req, Command& c) {
  if (c.op == Op::connect || c.op == Op::refresh) {
    c.token = string_field(req, "token");
    return;
  }
  const auto channel = req.find("channel");
  if (channel == req.end() || !channel->is_string())
    throw std::invalid_argument("\"channel\" must be a string");
  c.channel = channel->get<std::string>();
  if (c.op == Op::subscribe) {
    c.token = string_field(req, "token");
    if (const auto since = req.find("since"); since != req.end() && !since->is_null()) {
      const auto epoch = since->is_object() ? since->find("epoch") : since->end();
      const auto offset = since->is_object() ? count_field(*since, "offset") : std::nullopt;
      if (!since->is_object() || !offset || epoch == since->end() || !epoch->is_string())
        throw std::invalid_argument("\"since\" must be {\"offset\": N, \"epoch\": \"E\"}");
      c.since = pubsub::StreamPosition{*offset, epoch->get<std::string>()};
    }
  } else if (c.op == Op::publish) {
    const auto data = req.find("data");
    if (data == req.end()) throw std::invalid_argument("\"data\" is required (any JSON value)");
    // Stored and pushed as this JSON text.
    c.data = data->dump();
    c.has_data = true;
  } else if (c.op == Op::history) {
    c.limit = count_field(req, "limit");
    c.newest = true;
  }
}

std::string position_fields(const pubsub::StreamPosition& p) {
  return ",\"offset\":" + std::to_string(p.offset) + ",\"epoch\":\"" + p.epoch + "\"";
}

long long to_millis(heartwheel::Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

std::string_view chat_error_code(Op op, Fault f) noexcept {
  // Version 2: whatever refused a connect or a refresh, the client was not
  // let in (the message says why).
  if ((op == Op::connect || op == Op::refresh) && f != Fault::requests_in_flight &&
      f != Fault::bad_json && f != Fault::too_deep)
    return "unauthorized";
  if (f == Fault::token_expired) return "permission_denied";  // a channel token
  // History or presence off in the namespace (Centrifugo's not_available).
  if (f == Fault::not_available &&
      (op == Op::history || op == Op::presence || op == Op::presence_stats))
    return "permission_denied";
  return fault_name(f);
}

namespace {
std::string_view code_of(Op op, Fault f) noexcept { return chat_error_code(op, f); }

class ChatCodec final : public Codec {
 public:
  Kind kind() const noexcept override { return Kind::chat; }
  bool connect_first(bool authenticating) const noexcept override { return authenticating; }

  void read(std::string_view frame, std::size_t max_depth, std::vector<Item>& out) const override {
    Item& item = out.emplace_back();
    const auto fail = [&](Fault f, std::string message) {
      item.failure = Failure{f, std::move(message)};
    };
    heartwheel::cli::BoundedJson parsed = heartwheel::cli::parse_bounded_json(frame, max_depth);
    if (parsed.status == heartwheel::cli::BoundedJson::Status::too_deep)
      return fail(Fault::too_deep, "the frame nests arrays and objects more than " +
                                       std::to_string(max_depth) + " deep");
    if (parsed.status != heartwheel::cli::BoundedJson::Status::ok)
      return fail(Fault::bad_json, "the frame is not JSON");
    const Json& req = parsed.value;
    if (!req.is_object()) return fail(Fault::bad_request, "a request is a JSON object");
    item.id = req.contains("id") ? req["id"] : Json(nullptr);
    const auto op = req.find("op");
    if (op == req.end() || !op->is_string())
      return fail(Fault::bad_request, "\"op\" must be a string");
    const std::optional<Op> known = op_of(op->get_ref<const std::string&>());
    if (!known)
      return fail(Fault::unknown_op,
                  "unknown op; the ops are subscribe, unsubscribe, publish, presence, history");
    item.op = *known;
    Command c;
    c.op = *known;
    c.id = item.id;
    try {
      read_fields(req, c);
    } catch (const std::invalid_argument& e) {
      return fail(Fault::bad_request, e.what());
    }
    item.command = std::move(c);
  }

  Response answer(const ReplyTo& to, const Answer& answer) const override {
    return std::visit([&](const auto& a) { return reply(to, a); }, answer);
  }

  std::string unsubscribed(std::string_view channel) const override {
    return "{\"channel\":" + Json(std::string(channel)).dump() + ",\"unsubscribed\":true}";
  }
  std::string publication_json(const pubsub::Publication& p) const override {
    return chat::publication_json(p);
  }
  std::string presence_json(const pubsub::PresenceEvent& e) const override {
    return chat::presence_json(e);
  }

 private:
  static Response reply(const ReplyTo& to, const Failure& f) {
    Response r;
    if (to.server_side) return r;  // a token's channel the hub refused: skipped
    if (f.fault == Fault::connect_timeout) return close(kCloseConnectTimeout, "no connect in time");
    if (f.fault == Fault::connection_expired) return close(kCloseUnauthorized, "token expired");
    if (f.fault == Fault::backend_disconnect)
      return close(static_cast<std::uint16_t>(f.code), f.message);
    std::string message = f.message;
    if (f.fault == Fault::backend_error)
      message = "the backend refused (" + std::to_string(f.code) + "): " + message;
    r.text = error_reply(to.id, code_of(to.op, f.fault), message);
    if (code_of(to.op, f.fault) == "unauthorized") {
      r.close_code = kCloseUnauthorized;
      r.close_reason = "unauthorized";
    }
    return r;
  }
  static Response close(std::uint16_t code, std::string reason) {
    Response r;
    r.close_code = code;
    r.close_reason = std::move(reason);
    return r;
  }
  static Response reply(const ReplyTo& to, const Done&) { return {ok_reply(to.id), 0, {}}; }
  static Response reply(const ReplyTo& to, const ConnectAnswer& a) {
    Json c = {{"client", a.client},
              {"user", a.user},
              {"worker", a.worker},
              {"ping_interval_ms", to_millis(a.ping_interval)}};
    if (a.expires_in) c["expires_in_ms"] = to_millis(*a.expires_in);
    return {
        ok_reply(to.id, ",\"connect\":" + c.dump(-1, ' ', false, Json::error_handler_t::replace)),
        0,
        {}};
  }
  static Response reply(const ReplyTo& to, const SubscribeAnswer& a) {
    if (to.server_side) return {};  // publications come as pushes, no reply
    return {ok_reply(to.id, position_fields(a.position) +
                                ",\"recovered\":" + (a.recovered ? "true" : "false") +
                                ",\"publications\":" + publications_json(a.publications) +
                                ",\"count\":" + std::to_string(a.subscribers)),
            0,
            {}};
  }
  static Response reply(const ReplyTo& to, const PublishAnswer& a) {
    return {ok_reply(to.id, position_fields(a.position)), 0, {}};
  }
  static Response reply(const ReplyTo& to, const PresenceAnswer& a) {
    std::string fields = ",\"count\":" + std::to_string(a.count) + ",\"clients\":[";
    for (std::size_t i = 0; i < a.members.size(); ++i) fields += (i ? "," : "") + a.members[i].info;
    fields += ']';
    // Cut (by --max-reply-bytes or the 1,000-member cap): the reply says how
    // many it carries, as history's does.
    if (a.total > a.members.size())
      fields += ",\"truncated\":true,\"limit\":" + std::to_string(a.members.size());
    return {ok_reply(to.id, fields), 0, {}};
  }
  static Response reply(const ReplyTo& to, const PresenceStatsAnswer& a) {
    return {ok_reply(to.id, ",\"count\":" + std::to_string(a.clients) +
                                ",\"users\":" + std::to_string(a.users)),
            0,
            {}};
  }
  static Response reply(const ReplyTo& to, const HistoryAnswer& a) {
    std::string cut;
    if (a.truncated) cut = ",\"truncated\":true,\"limit\":" + std::to_string(a.publications.size());
    return {ok_reply(to.id, position_fields(a.top) +
                                ",\"publications\":" + publications_json(a.publications) + cut),
            0,
            {}};
  }
  static Response reply(const ReplyTo& to, const RefreshAnswer& a) {
    return {ok_reply(to.id, a.expires_in
                                ? ",\"expires_in_ms\":" + std::to_string(to_millis(*a.expires_in))
                                : ""),
            0,
            {}};
  }
  static Response reply(const ReplyTo& to, const RpcAnswer& a) {
    return {ok_reply(to.id, a.data.empty() ? "" : ",\"data\":" + a.data), 0, {}};
  }
};

}  // namespace

const Codec& chat_codec() noexcept {
  static const ChatCodec codec;
  return codec;
}

const Codec& codec_of(Codec::Kind kind) noexcept {
  return kind == Codec::Kind::centrifuge ? centrifuge_codec() : chat_codec();
}

}  // namespace chat
