// The server HTTP API, Centrifugo's (docs/centrifugo.md): POST /api/<method>
// with a JSON body, the key in `X-API-Key: KEY` or `Authorization: apikey
// KEY` (--api-key-file; a wrong or missing one: 401). Answers 200 with
// {"result":{...}} or {"error":{"code":N,"message":"..."}}; a body that is
// not a JSON object 400, an unknown method 404.
//
// publish, broadcast, history and history_remove go to the broker through
// this worker's hub; subscribe, unsubscribe, disconnect and refresh are
// commands on the control channel that every worker of every node carries
// out on its clients; presence, presence_stats, channels and info are
// surveys of every worker (control.cpp).
#include <heartwheel/auth/api_key.h>

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "bounded_json.h"
#include "centrifuge_json.h"
#include "client.h"
#include "worker.h"

namespace chat {

namespace http = heartwheel::http;
namespace pubsub = heartwheel::pubsub;

namespace {

using Json = nlohmann::json;

Json error_reply(std::uint32_t code, std::string_view message) {
  return {{"error", {{"code", code}, {"message", std::string(message)}}}};
}
Json bad_request(std::string_view why) { return error_reply(107, why); }
Json result(Json r = Json::object()) { return {{"result", std::move(r)}}; }

// The API's error for a pub/sub or engine failure.
Json api_error(const Failure& f) {
  switch (f.fault) {
    case Fault::unavailable:
    case Fault::internal:
      return error_reply(100, f.message.empty() ? "internal server error" : f.message);
    case Fault::unknown_channel:
      return error_reply(102, f.message);
    case Fault::unrecoverable_position:
      return error_reply(112, f.message);
    default:
      return error_reply(107, f.message);
  }
}

// A required string field, or throws std::invalid_argument.
std::string required(const Json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    throw std::invalid_argument(std::string(key) + " is required (a non-empty string)");
  return it->get<std::string>();
}
std::string optional_string(const Json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_string()) throw std::invalid_argument(std::string(key) + " must be a string");
  return it->get<std::string>();
}

void check_channel(const std::string& channel) {
  if (reserved_channel(channel))
    throw std::invalid_argument("channels under __hw: are the server's own");
}

// A publication as the API shows it: {"data","info","offset"}.
Json publication(const pubsub::Publication& p) {
  std::string text;
  append_centrifuge_publication(text, p);
  return Json::parse(text, nullptr, false);
}

// n replies that come back in any order, handed to `whole` in the order of
// their slots once the last one is in (broadcast's and batch's).
class Gather {
 public:
  using Whole = std::function<void(std::vector<Json>)>;
  static std::shared_ptr<Gather> make(std::size_t n, Whole whole) {
    auto g = std::make_shared<Gather>();
    g->replies_.resize(n);
    g->left_ = n;
    g->whole_ = std::move(whole);
    if (n == 0) g->whole_({});
    return g;
  }
  // The callback for slot i (each called once).
  static std::function<void(Json)> slot(const std::shared_ptr<Gather>& g, std::size_t i) {
    return [g, i](Json reply) {
      g->replies_[i] = std::move(reply);
      if (--g->left_ == 0) g->whole_(std::move(g->replies_));
    };
  }

 private:
  std::vector<Json> replies_;
  std::size_t left_ = 0;
  Whole whole_;
};

bool presented_key(const heartwheel::auth::ApiKey& key, const http::Request& req) {
  if (const std::string* k = req.header("X-API-Key"); k != nullptr && key.matches(*k)) return true;
  const std::string* a = req.header("Authorization");
  if (a == nullptr) return false;
  const auto presented = heartwheel::auth::parse_apikey_authorization(*a);
  return presented && key.matches(*presented);
}

}  // namespace

bool Worker::serve_api(const http::Request& req, http::Responder& r) {
  const std::string_view path = req.path();
  if (!config_.api_key || !path.starts_with("/api/")) return false;
  const auto answer = [&r](int status, const Json& body) {
    http::Response resp = http::Response::text(
        status, body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n",
        "application/json");
    r.respond(std::move(resp));
  };
  if (!presented_key(*config_.api_key, req)) {
    ++stats_.errors["api_unauthorized"];
    answer(401, error_reply(101, "unauthorized: X-API-Key or Authorization: apikey KEY"));
    return true;
  }
  if (req.method != "POST") {
    answer(405, error_reply(107, "the server API takes POST"));
    return true;
  }
  heartwheel::cli::BoundedJson body = heartwheel::cli::parse_bounded_json(
      req.body.empty() ? "{}" : req.body, config_.max_json_depth);
  if (body.status != heartwheel::cli::BoundedJson::Status::ok || !body.value.is_object()) {
    answer(400, error_reply(107, "the body is not a JSON object"));
    return true;
  }
  const std::string method(path.substr(5));
  ++stats_.requests["api_" + method];
  auto responder = std::make_shared<http::Responder>(std::move(r));
  call_api(method, body.value, [responder](Json reply) {
    const int status =
        reply.contains("error") && reply["error"].value("code", 0) == 404 ? 404 : 200;
    responder->respond(http::Response::text(
        status, reply.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n",
        "application/json"));
  });
  return true;
}

void Worker::call_api(const std::string& method, const Json& body, ApiDone done) {
  try {
    if (method == "publish") return api_publish(body, std::move(done));
    if (method == "broadcast") return api_broadcast(body, std::move(done));
    if (method == "history") return api_history(body, std::move(done));
    if (method == "batch") return api_batch(body, std::move(done));
    if (method == "history_remove") {
      const std::string channel = required(body, "channel");
      check_channel(channel);
      return hub_->remove_history(channel, [done](std::error_code ec) {
        done(ec ? api_error(Failure{fault_of(ec), ec.message(), 0}) : result());
      });
    }
    if (method == "disconnect" || method == "unsubscribe" || method == "subscribe" ||
        method == "refresh") {
      Json command = {{"op", method},
                      {"user", optional_string(body, "user")},
                      {"client", optional_string(body, "client")}};
      if (method == "subscribe" || method == "unsubscribe") {
        command["channel"] = required(body, "channel");
        check_channel(command["channel"]);
      }
      if (command["user"] == "" && command["client"] == "" && method != "disconnect")
        throw std::invalid_argument("user or client is required");
      if (method == "disconnect") {
        if (const auto d = body.find("disconnect"); d != body.end() && d->is_object()) {
          const int code = d->value("code", 0);
          if (code != 0 && (code < 3000 || code > 4999))
            throw std::invalid_argument("disconnect.code must be 3000-4999");
          if (code != 0) command["code"] = code;
          command["reason"] = d->value("reason", std::string());
        }
        if (const auto w = body.find("whitelist"); w != body.end()) command["whitelist"] = *w;
      }
      if (method == "refresh") {
        command["expired"] = body.value("expired", false);
        if (body.contains("expire_at"))
          command["expire_at"] = body.value("expire_at", std::int64_t{0});
      }
      return broadcast_control(std::move(command), [done](std::error_code ec) {
        done(ec ? api_error(Failure{fault_of(ec), ec.message(), 0}) : result());
      });
    }
    if (method == "presence" || method == "presence_stats") {
      const std::string channel = required(body, "channel");
      check_channel(channel);
      const bool stats = method == "presence_stats";
      const bool by_user = identified();
      return survey({{"op", "survey"}, {"what", "presence"}, {"channel", channel}},
                    [done, stats, by_user](std::vector<Json> answers) {
                      Json presence = Json::object();
                      std::set<std::string> users;
                      for (const Json& a : answers) {
                        const auto list = a.find("members");
                        if (list == a.end() || !list->is_array()) continue;
                        for (const Json& m : *list) {
                          std::string info;
                          append_client_info(info, m.value("info", std::string()));
                          Json ci = Json::parse(info, nullptr, false);
                          users.insert(by_user ? ci.value("user", std::string())
                                               : m.value("client", std::string()));
                          presence[m.value("client", std::string())] = std::move(ci);
                        }
                      }
                      if (!stats) return done(result({{"presence", std::move(presence)}}));
                      done(result({{"num_clients", presence.size()}, {"num_users", users.size()}}));
                    });
    }
    if (method == "channels") {
      const std::string pattern = optional_string(body, "pattern");
      return survey({{"op", "survey"}, {"what", "channels"}, {"pattern", pattern}},
                    [done](std::vector<Json> answers) {
                      std::map<std::string, std::uint64_t> merged;
                      for (const Json& a : answers) {
                        const auto it = a.find("channels");
                        if (it == a.end() || !it->is_object()) continue;
                        for (const auto& [name, n] : it->items())
                          if (n.is_number_unsigned()) merged[name] += n.get<std::uint64_t>();
                      }
                      Json channels = Json::object();
                      for (const auto& [name, n] : merged) channels[name] = {{"num_clients", n}};
                      done(result({{"channels", std::move(channels)}}));
                    });
    }
    if (method == "info") {
      return survey({{"op", "survey"}, {"what", "info"}}, [done](std::vector<Json> answers) {
        std::map<std::string, Json> nodes;  // by uid, their workers summed
        for (const Json& a : answers) {
          Json& n = nodes[a.value("node", std::string())];
          if (n.is_null())
            n = {{"uid", a.value("node", std::string())},
                 {"name", a.value("name", std::string())},
                 {"version", a.value("version", std::string())},
                 {"num_clients", 0},
                 {"num_users", 0},
                 {"num_channels", 0},
                 {"num_subs", 0},
                 {"uptime", a.value("uptime", 0)}};
          for (const char* k : {"clients", "users", "channels", "subs"})
            n[std::string("num_") + k] =
                n[std::string("num_") + k].get<std::uint64_t>() + a.value(k, std::uint64_t{0});
        }
        Json list = Json::array();
        for (auto& [uid, n] : nodes) list.push_back(std::move(n));
        done(result({{"nodes", std::move(list)}}));
      });
    }
    done(error_reply(404, "no API method " + method));
  } catch (const std::exception& e) {
    done(bad_request(e.what()));
  }
}

void Worker::api_publish(const Json& body, ApiDone done) {
  const std::string channel = required(body, "channel");
  check_channel(channel);
  if (body.contains("b64data"))
    throw std::invalid_argument("b64data: this server's clients speak JSON; send data");
  const auto data = body.find("data");
  if (data == body.end()) throw std::invalid_argument("data is required (any JSON value)");
  // A retry with the key of a publish made within 5 minutes (on any node)
  // gets that one's result and publishes nothing (broker.h).
  pubsub::PublishOptions options;
  options.idempotency_key = optional_string(body, "idempotency_key");
  if (!options.idempotency_key.empty() &&
      !pubsub::is_caller_idempotency_key(options.idempotency_key))
    throw std::invalid_argument("idempotency_key: 1 to 256 bytes without control characters");
  hub_->publish(channel, data->dump(), {}, options, [this, done](pubsub::PublishResult r) {
    if (r.error) return done(api_error(Failure{fault_of(r.error), r.error.message(), 0}));
    if (!r.duplicate) ++stats_.publications;
    Json res = Json::object();
    if (r.position.offset > 0) res = {{"offset", r.position.offset}, {"epoch", r.position.epoch}};
    done(result(std::move(res)));
  });
}

void Worker::api_broadcast(const Json& body, ApiDone done) {
  const auto channels = body.find("channels");
  if (channels == body.end() || !channels->is_array() || channels->empty())
    throw std::invalid_argument("channels is required (a non-empty array of channel names)");
  const auto g = Gather::make(channels->size(), [done](std::vector<Json> responses) {
    done(result({{"responses", std::move(responses)}}));
  });
  for (std::size_t i = 0; i < channels->size(); ++i) {
    Json one = body;
    one.erase("channels");
    one["channel"] = (*channels)[i];
    call_api("publish", one, Gather::slot(g, i));
  }
}

void Worker::api_history(const Json& body, ApiDone done) {
  Command cmd;
  cmd.op = Op::history;
  cmd.channel = required(body, "channel");
  check_channel(cmd.channel);
  const std::int64_t limit = body.value("limit", std::int64_t{0});
  cmd.limit =
      limit < 0 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(limit);
  cmd.newest_first = body.value("reverse", false);
  cmd.newest = cmd.newest_first;
  if (const auto since = body.find("since"); since != body.end() && since->is_object())
    cmd.since = pubsub::StreamPosition{since->value("offset", std::uint64_t{0}),
                                       since->value("epoch", std::string())};
  const bool reverse = cmd.newest_first;
  history(cmd, [done, reverse](Answer a) {
    if (const auto* f = std::get_if<Failure>(&a)) return done(api_error(*f));
    auto& h = std::get<HistoryAnswer>(a);
    Json pubs = Json::array();
    for (std::size_t i = 0; i < h.publications.size(); ++i)
      pubs.push_back(publication(*h.publications[reverse ? h.publications.size() - 1 - i : i]));
    done(result(
        {{"publications", std::move(pubs)}, {"epoch", h.top.epoch}, {"offset", h.top.offset}}));
  });
}

void Worker::api_batch(const Json& body, ApiDone done) {
  const auto commands = body.find("commands");
  if (commands == body.end() || !commands->is_array())
    throw std::invalid_argument("commands is required (an array of {\"method\": {...}})");
  const auto g = Gather::make(commands->size(), [done](std::vector<Json> replies) {
    done(Json{{"replies", std::move(replies)}});
  });
  for (std::size_t i = 0; i < commands->size(); ++i) {
    const Json& c = (*commands)[i];
    const auto finish = Gather::slot(g, i);
    if (!c.is_object() || c.size() != 1) {
      finish(bad_request("a command is {\"method\": {...}}"));
      continue;
    }
    const std::string method = c.begin().key();
    if (method == "batch") {
      finish(bad_request("a batch inside a batch"));
      continue;
    }
    // Each reply is {"<method>": result} or {"error": ...}, as Centrifugo's.
    call_api(method, c.begin().value(), [finish, method](Json reply) {
      if (reply.contains("error")) return finish(std::move(reply));
      finish(Json{{method, std::move(reply["result"])}});
    });
  }
}

}  // namespace chat
