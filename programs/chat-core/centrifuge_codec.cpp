// Centrifugo's client protocol v2, JSON, as a Codec (docs/centrifugo.md):
// commands {"id":N,"<method>":{...}}, one per line of a frame; replies
// {"id":N,"<method>":{...}} or {"id":N,"error":{"code":C,"message":M}};
// an empty command is the client's pong. Codes and closes as centrifugal/
// centrifuge's errors.go and disconnect.go: a command that cannot be read
// closes the connection with 3501 "bad request", a refused token with 3500
// "invalid token", an expired one answers error 109 (the SDK asks its
// getToken and reconnects).
#include <limits>

#include "bounded_json.h"
#include "centrifuge_json.h"
#include "codec.h"

namespace chat {

namespace {

using Json = nlohmann::json;
namespace pubsub = heartwheel::pubsub;

struct Method {
  std::string_view name;
  Op op;
};
constexpr Method kMethods[] = {
    {"connect", Op::connect}, {"subscribe", Op::subscribe}, {"unsubscribe", Op::unsubscribe},
    {"publish", Op::publish}, {"presence", Op::presence},   {"presence_stats", Op::presence_stats},
    {"history", Op::history}, {"ping", Op::ping},           {"send", Op::send},
    {"rpc", Op::rpc},         {"refresh", Op::refresh},     {"sub_refresh", Op::sub_refresh},
};

std::string_view method_name(Op op) noexcept {
  for (const Method& m : kMethods)
    if (m.op == op) return m.name;
  return "unknown";
}

// Readers of a command's fields: absent is the type's zero (protobuf's
// JSON), a wrong type throws std::invalid_argument (closing 3501).
std::string text(const Json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return {};
  if (!it->is_string()) throw std::invalid_argument(std::string(key) + " must be a string");
  return it->get<std::string>();
}
bool flag(const Json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw std::invalid_argument(std::string(key) + " must be a boolean");
  return it->get<bool>();
}
std::int64_t integer(const Json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return 0;
  if (!it->is_number_integer())
    throw std::invalid_argument(std::string(key) + " must be an integer");
  return it->get<std::int64_t>();
}
std::uint64_t offset(const Json& o, const char* key) {
  const std::int64_t v = integer(o, key);
  if (v < 0) throw std::invalid_argument(std::string(key) + " must not be negative");
  return static_cast<std::uint64_t>(v);
}
// A bytes field: in the JSON protocol the raw JSON value.
void data(const Json& o, const char* key, Command& c) {
  const auto it = o.find(key);
  if (it == o.end()) return;
  c.data = it->dump();
  c.has_data = true;
}

void read_fields(const Json& body, Command& c) {
  switch (c.op) {
    case Op::connect:
      c.token = text(body, "token");
      data(body, "data", c);
      (void)text(body, "name");  // the SDK's name and version: not kept
      (void)text(body, "version");
      break;
    case Op::subscribe:
      c.channel = text(body, "channel");
      c.token = text(body, "token");
      data(body, "data", c);
      if (flag(body, "recover"))
        c.since = pubsub::StreamPosition{offset(body, "offset"), text(body, "epoch")};
      break;
    case Op::unsubscribe:
    case Op::presence:
    case Op::presence_stats:
      c.channel = text(body, "channel");
      break;
    case Op::publish:
      c.channel = text(body, "channel");
      data(body, "data", c);
      break;
    case Op::history: {
      c.channel = text(body, "channel");
      // 0: none (the position only), below 0: all the server keeps.
      const std::int64_t limit = integer(body, "limit");
      c.limit =
          limit < 0 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(limit);
      c.newest_first = flag(body, "reverse");
      c.newest = c.newest_first;
      if (const auto since = body.find("since"); since != body.end() && !since->is_null()) {
        if (!since->is_object()) throw std::invalid_argument("since must be an object");
        c.since = pubsub::StreamPosition{offset(*since, "offset"), text(*since, "epoch")};
      }
      break;
    }
    case Op::rpc:
      c.method = text(body, "method");
      data(body, "data", c);
      break;
    case Op::refresh:
      c.token = text(body, "token");
      break;
    case Op::sub_refresh:
      c.channel = text(body, "channel");
      c.token = text(body, "token");
      break;
    case Op::send:
      data(body, "data", c);
      break;
    case Op::ping:
      break;
  }
}

void read_line(std::string_view line, std::size_t max_depth, std::vector<Item>& out) {
  const auto bad = [&](std::string message, Json id = nullptr) {
    Item& item = out.emplace_back();
    item.id = std::move(id);
    item.failure = Failure{Fault::bad_request, std::move(message)};
  };
  heartwheel::cli::BoundedJson parsed = heartwheel::cli::parse_bounded_json(line, max_depth);
  if (parsed.status != heartwheel::cli::BoundedJson::Status::ok || !parsed.value.is_object())
    return bad(parsed.status == heartwheel::cli::BoundedJson::Status::too_deep
                   ? "the command nests deeper than --max-json-depth"
                   : "a command is a JSON object");
  const Json& cmd = parsed.value;
  std::uint64_t id = 0;
  if (const auto it = cmd.find("id"); it != cmd.end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() > 0xffffffffu)
      return bad("id must be a 32-bit unsigned integer");
    id = it->get<std::uint64_t>();
  }
  const bool send = cmd.contains("send");
  if (id == 0 && !send) return;  // the client's pong (an empty command)
  const Method* method = nullptr;
  for (const Method& m : kMethods) {
    if (cmd.contains(m.name)) {
      if (method != nullptr) return bad("a command carries one method", Json(id));
      method = &m;
    }
  }
  if (method == nullptr) return bad("no method this server knows", Json(id));
  Item& item = out.emplace_back();
  item.id = Json(id);
  item.op = method->op;
  Command c;
  c.op = method->op;
  c.id = Json(id);
  const Json& body = cmd[std::string(method->name)];
  try {
    if (!body.is_object() && !body.is_null())
      throw std::invalid_argument(std::string(method->name) + " must be an object");
    if (body.is_object()) read_fields(body, c);
  } catch (const std::invalid_argument& e) {
    item.failure = Failure{Fault::bad_request, e.what()};
    return;
  }
  item.command = std::move(c);
}

// {"id":N,"<method>":<body>}
std::string result(const ReplyTo& to, std::string_view body) {
  std::string out = "{\"id\":";
  out += to.id.dump();
  out += ",\"";
  out += method_name(to.op);
  out += "\":";
  out += body;
  out += '}';
  return out;
}

std::string error(const ReplyTo& to, std::uint32_t code, std::string_view message,
                  bool temporary = false) {
  Json e = {{"code", code}, {"message", std::string(message)}};
  if (temporary) e["temporary"] = true;
  return "{\"id\":" + to.id.dump() +
         ",\"error\":" + e.dump(-1, ' ', false, Json::error_handler_t::replace) + "}";
}

Response close(std::uint16_t code, std::string reason) { return {{}, code, std::move(reason)}; }

// The reply to a failure: Centrifugo's error code, or a close.
Response failed(const ReplyTo& to, const Failure& f) {
  if (to.server_side) return {};  // a channel of the token the server could not join
  switch (f.fault) {
    case Fault::bad_json:
    case Fault::too_deep:
    case Fault::bad_request:
    case Fault::unknown_op:
      return close(3501, "bad request");
    case Fault::unauthorized:
      // A refused token (connect, refresh); anything before the connect.
      return to.op == Op::connect || to.op == Op::refresh ? close(3500, "invalid token")
                                                          : close(3501, "bad request");
    case Fault::connect_timeout:
      return close(3502, "stale");
    case Fault::connection_expired:
      return close(3005, "connection expired");
    case Fault::backend_disconnect:
      return close(static_cast<std::uint16_t>(f.code), f.message);
    case Fault::backend_down:
      if (to.op == Op::connect) return close(3004, "internal server error");
      return {error(to, 100, "internal server error", true)};
    case Fault::backend_error:
      return {error(to, f.code, f.message)};
    case Fault::not_subscribed:
      if (to.op == Op::unsubscribe) return {result(to, "{}")};  // nothing to undo
      return {error(to, 103, "permission denied")};
    case Fault::token_expired:
      return {error(to, 109, "token expired")};
    case Fault::requests_in_flight:
    case Fault::rate_limited:
      return {error(to, 111, "too many requests", true)};
    case Fault::empty_channel:
    case Fault::bad_channel:
    case Fault::bad_channel_character:
    case Fault::channel_too_long:
      return {error(to, 107, "bad request")};
    case Fault::channel_limit:
    case Fault::limit_exceeded:
    case Fault::data_too_large:
      return {error(to, 106, "limit exceeded")};
    case Fault::already_subscribed:
      return {error(to, 105, "already subscribed")};
    case Fault::permission_denied:
      return {error(to, 103, "permission denied")};
    case Fault::unknown_channel:
      return {error(to, 102, "unknown channel")};
    case Fault::not_available:
      return {error(to, 108, "not available")};
    case Fault::method_not_found:
      return {error(to, 104, "method not found")};
    case Fault::unrecoverable_position:
      return {error(to, 112, "unrecoverable position")};
    case Fault::unavailable:
    case Fault::internal:
      break;
  }
  return {error(to, 100, "internal server error", true)};
}

void append_ttl(std::string& out, const std::optional<heartwheel::Duration>& ttl) {
  if (!ttl) return;
  out += ",\"expires\":true,\"ttl\":";
  out += std::to_string(ttl_seconds(*ttl));
}

// A SubscribeResult's fields (without braces), as a reply and a push share them.
std::string subscribe_fields(const SubscribeAnswer& a, bool with_publications) {
  std::string out;
  if (a.recoverable) {
    out += "\"recoverable\":true,\"positioned\":true,\"epoch\":";
    append_json_string(out, a.position.epoch);
    out += ",\"offset\":";
    out += std::to_string(a.position.offset);
  }
  if (with_publications && !a.publications.empty()) {
    out += out.empty() ? "" : ",";
    out += "\"publications\":";
    out += centrifuge_publications(a.publications);
  }
  if (a.recovering) {
    out += out.empty() ? "" : ",";
    out += a.recovered ? "\"was_recovering\":true,\"recovered\":true" : "\"was_recovering\":true";
  }
  std::string ttl;
  append_ttl(ttl, a.ttl);
  if (!ttl.empty()) out += out.empty() ? ttl.substr(1) : ttl;
  if (!a.data.empty()) {
    out += out.empty() ? "\"data\":" : ",\"data\":";
    out += a.data;
  }
  return out;
}

Response answered(const ReplyTo& to, const Done&) {
  if (to.op == Op::send) return {};  // a send has no reply
  return {result(to, "{}")};
}

Response answered(const ReplyTo& to, const ConnectAnswer& a) {
  std::string body = "{\"client\":";
  append_json_string(body, a.client);
  body += ",\"version\":";
  append_json_string(body, server_version());
  append_ttl(body, a.ttl);
  if (!a.data.empty()) {
    body += ",\"data\":";
    body += a.data;
  }
  if (a.ping_interval.count() > 0) {
    body += ",\"ping\":";
    body += std::to_string(ping_seconds(a.ping_interval));
    body += ",\"pong\":true";
  }
  body += '}';
  return {result(to, body)};
}

Response answered(const ReplyTo& to, const SubscribeAnswer& a) {
  if (to.server_side) {  // a channel of the token: a subscribe push
    std::string out = "{\"push\":{\"channel\":";
    append_json_string(out, to.channel);
    out += ",\"subscribe\":{" + subscribe_fields(a, false) + "}}}";
    return {std::move(out)};
  }
  return {result(to, "{" + subscribe_fields(a, true) + "}")};
}

Response answered(const ReplyTo& to, const PublishAnswer&) { return {result(to, "{}")}; }

Response answered(const ReplyTo& to, const PresenceAnswer& a) {
  std::string body = "{\"presence\":{";
  for (std::size_t i = 0; i < a.members.size(); ++i) {
    if (i > 0) body += ',';
    append_json_string(body, a.members[i].client);
    body += ':';
    append_client_info(body, a.members[i].info);
  }
  body += "}}";
  return {result(to, body)};
}

Response answered(const ReplyTo& to, const PresenceStatsAnswer& a) {
  return {result(to, "{\"num_clients\":" + std::to_string(a.clients) +
                         ",\"num_users\":" + std::to_string(a.users) + "}")};
}

Response answered(const ReplyTo& to, const HistoryAnswer& a) {
  std::string body = "{";
  if (!a.publications.empty())
    body += "\"publications\":" + centrifuge_publications(a.publications, to.newest_first) + ",";
  body += "\"epoch\":";
  append_json_string(body, a.top.epoch);
  body += ",\"offset\":" + std::to_string(a.top.offset) + "}";
  return {result(to, body)};
}

Response answered(const ReplyTo& to, const RefreshAnswer& a) {
  std::string body = "{";
  if (to.op == Op::refresh) {
    body += "\"client\":";
    append_json_string(body, a.client);
    body += ",\"version\":";
    append_json_string(body, server_version());
  }
  std::string ttl;
  append_ttl(ttl, a.ttl);
  body += body.size() == 1 && !ttl.empty() ? ttl.substr(1) : ttl;
  body += '}';
  return {result(to, body)};
}

Response answered(const ReplyTo& to, const RpcAnswer& a) {
  return {result(to, a.data.empty() ? "{}" : "{\"data\":" + a.data + "}")};
}

class CentrifugeCodec final : public Codec {
 public:
  Kind kind() const noexcept override { return Kind::centrifuge; }
  bool connect_first(bool) const noexcept override { return true; }

  void read(std::string_view frame, std::size_t max_depth, std::vector<Item>& out) const override {
    // Several commands may share a frame, one per line (the SDKs batch them).
    while (!frame.empty()) {
      const std::size_t nl = frame.find('\n');
      const std::string_view line = frame.substr(0, nl);
      frame = nl == std::string_view::npos ? std::string_view() : frame.substr(nl + 1);
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      read_line(line, max_depth, out);
    }
  }

  Response answer(const ReplyTo& to, const Answer& answer) const override {
    if (const auto* f = std::get_if<Failure>(&answer)) return failed(to, *f);
    return std::visit(
        [&](const auto& a) -> Response {
          if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Failure>) {
            return failed(to, a);
          } else {
            return answered(to, a);
          }
        },
        answer);
  }

  std::string unsubscribed(std::string_view channel) const override {
    return centrifuge_unsubscribe_push(channel);
  }
  std::string publication_json(const pubsub::Publication& p) const override {
    return centrifuge_publication_push(p);
  }
  std::string presence_json(const pubsub::PresenceEvent& e) const override {
    return centrifuge_presence_push(e);
  }
};

}  // namespace

const Codec& centrifuge_codec() noexcept {
  static const CentrifugeCodec codec;
  return codec;
}

std::string_view server_version() noexcept { return "heartwheel " HEARTWHEEL_CHAT_VERSION; }

}  // namespace chat
