// Centrifugo's server API for publishing, on heartwheel-push: POST
// /api/publish and POST /api/broadcast with Centrifugo's bodies and answers
// (docs/centrifugo.md), beside our POST /publish. The same key as /publish
// (Authorization: apikey KEY, or X-API-Key: KEY), the same checks of the
// channel and data (parse_publish), the same immediate publish through the
// broker (idempotency_key included). Delayed pushes are /publish's only.
#include <heartwheel/http/message.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "api.h"
#include "node.h"

namespace pushsrv {

namespace http = heartwheel::http;
namespace pubsub = heartwheel::pubsub;
using Json = nlohmann::json;

namespace {

http::Response api_json(int status, const Json& body) {
  return http::Response::text(
      status, body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n", "application/json");
}

// Centrifugo's error object: 107 bad request, 100 internal.
Json api_error(int code, std::string message) {
  return {{"error", {{"code", code}, {"message", std::move(message)}}}};
}

}  // namespace

void Node::centrifugo_api(std::string_view method, const http::Request& req, http::Responder r) {
  if (!is_json_content_type(req.header("Content-Type"))) {
    ++stats_.publish_refused;
    r.respond(api_json(415, api_error(107, "the server API takes Content-Type: application/json")));
    return;
  }
  const Json body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) {
    ++stats_.publish_refused;
    r.respond(api_json(400, api_error(107, "the body is not a JSON object")));
    return;
  }
  // Each channel's publish is /publish's, answered as Centrifugo's reply.
  struct Gather {
    std::vector<Json> replies;
    std::size_t left = 0;
    bool broadcast = false;
    http::Responder responder;
  };
  auto g = std::make_shared<Gather>();
  g->broadcast = method == "broadcast";
  g->responder = std::move(r);
  std::vector<Json> publishes;
  if (g->broadcast) {
    const auto channels = body.find("channels");
    if (channels == body.end() || !channels->is_array() || channels->empty()) {
      ++stats_.publish_refused;
      g->responder.respond(api_json(
          200, api_error(107, "channels is required (a non-empty array of channel names)")));
      return;
    }
    for (const Json& channel : *channels) {
      Json one = body;
      one.erase("channels");
      one["channel"] = channel;
      publishes.push_back(std::move(one));
    }
  } else {
    publishes.push_back(body);
  }
  g->replies.resize(publishes.size());
  g->left = publishes.size();
  const auto reply = [g](std::size_t i, Json answer) {
    g->replies[i] = std::move(answer);
    if (--g->left > 0) return;
    const Json whole =
        g->broadcast ? Json{{"result", {{"responses", g->replies}}}} : std::move(g->replies[0]);
    (void)g->responder.respond(api_json(200, whole));
  };
  for (std::size_t i = 0; i < publishes.size(); ++i) {
    if (publishes[i].contains("delay_ms")) {
      ++stats_.publish_refused;
      reply(i, api_error(107, "delay_ms is POST /publish's (a delayed push has an id to cancel)"));
      continue;
    }
    auto parsed = parse_publish(publishes[i].dump(), broker_.limits(), config_.max_delay,
                                chat_config_.max_json_depth);
    if (const auto* bad = std::get_if<ApiError>(&parsed)) {
      ++stats_.publish_refused;
      reply(i, api_error(107, bad->message));
      continue;
    }
    auto& p = std::get<PublishRequest>(parsed);
    pubsub::PublishOptions options;
    options.idempotency_key = std::move(p.idempotency_key);
    hub_.publish(p.channel, std::move(p.data), {}, options,
                 [this, reply, i](pubsub::PublishResult result) {
                   if (result.error) {
                     ++stats_.publish_unavailable;
                     return reply(i, api_error(100, result.error.message()));
                   }
                   ++stats_.publish_accepted;
                   ++(result.duplicate ? stats_.delivered_already : stats_.delivered);
                   Json res = Json::object();
                   if (result.position.offset > 0)
                     res = {{"offset", result.position.offset}, {"epoch", result.position.epoch}};
                   reply(i, {{"result", std::move(res)}});
                 });
  }
}

}  // namespace pushsrv
