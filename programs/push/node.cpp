// See node.h.
#include "node.h"

#include <heartwheel/common/error.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <stdexcept>

#include "api.h"
#include "caller.h"

namespace pushsrv {

namespace http = heartwheel::http;
namespace pubsub = heartwheel::pubsub;
namespace push = heartwheel::push;

void NodeStats::merge(const NodeStats& o) {
  delayed.merge(o.delayed);
  redis.merge(o.redis);
  for (const heartwheel::redis::MasterStats& m : o.redis_masters) {
    auto mine = std::find_if(redis_masters.begin(), redis_masters.end(),
                             [&](const auto& x) { return x.address == m.address; });
    if (mine == redis_masters.end()) {
      redis_masters.push_back(m);
      continue;
    }
    mine->slots = std::max(mine->slots, m.slots);
    mine->connected = mine->connected && m.connected;
    mine->pending += m.pending;
    mine->link.merge(m.link);
  }
  sse.merge(o.sse);
  publish_accepted += o.publish_accepted;
  publish_refused += o.publish_refused;
  publish_unavailable += o.publish_unavailable;
  publish_capped += o.publish_capped;
  publish_unauthorized += o.publish_unauthorized;
  sse_refused += o.sse_refused;
  cancels_done += o.cancels_done;
  cancels_missed += o.cancels_missed;
  delivered += o.delivered;
  deliver_refused += o.deliver_refused;
  delivered_already += o.delivered_already;
}

namespace {
http::Response json_response(int status, std::string body) {
  return http::Response::text(status, std::move(body) + "\n", "application/json");
}

http::Response not_allowed(std::string_view allow) {
  http::Response r =
      json_response(405, error_json("method_not_allowed", "allowed: " + std::string(allow)));
  r.headers.push_back({"Allow", std::string(allow)});
  return r;
}

// The node's own hub: no encoder (SSE streams format their own events).
pubsub::HubOptions hub_options(uv_loop_t* loop) {
  pubsub::HubOptions o;
  o.loop = loop;
  return o;
}

// Redis could not take the command (down, buffer full, too slow): 503.
http::Response unavailable(const std::error_code& ec) {
  http::Response r = json_response(
      503, error_json("redis_unavailable", "Redis did not store it: " + ec.message()));
  r.headers.push_back({"Retry-After", "1"});
  return r;
}
}  // namespace

Node::Node(unsigned index, heartwheel::LoopWheel& wheel, const NodeConfig& node,
           const chat::Config& chat, pubsub::Broker& broker, chat::Roster& roster,
           chat::StatsBoard& chat_board)
    : config_(node),
      chat_config_(chat),
      broker_(broker),
      hub_(broker, hub_options(wheel.loop())),
      redis_(wheel, node.redis),
      queue_(wheel, redis_, node.delayed,
             [this](const push::DelayedPush& p, push::DeliveredCallback done) {
               deliver(p, std::move(done));
             }),
      chat_(index, chat, broker, roster, chat_board, &wheel),
      auth_(node.api_key ? &*node.api_key : nullptr, chat.auth.get()) {
  redis_.start();
  queue_.start();
}

Node::~Node() {
  streams_.clear();
  queue_.stop();
}

void Node::end_streams() noexcept {
  for (auto& [p, stream] : streams_) stream->end();
  streams_.clear();
}

void Node::finish() {
  end_streams();
  queue_.stop();
  redis_.stop();
}

NodeStats Node::stats() const {
  NodeStats s = stats_;
  s.delayed = queue_.stats();
  s.redis = redis_.stats();
  s.redis_masters = redis_.masters();
  return s;
}

bool Node::route(const http::Request& req, http::Responder& r) {
  const std::string_view path = req.path();
  const bool api = path == "/api/publish" || path == "/api/broadcast";
  if (path == "/publish" || path.substr(0, 9) == "/publish/" || api) {
    if (const auto refused = auth_.check_publish(req)) {
      ++stats_.publish_unauthorized;
      http::Response no = json_response(401, error_json(refused->code, refused->message));
      no.headers.push_back({"WWW-Authenticate", "apikey"});
      r.respond(std::move(no));
      return true;
    }
  }
  if (api) {
    if (req.method != "POST")
      r.respond(not_allowed("POST"));
    else
      centrifugo_api(path.substr(5), req, std::move(r));
    return true;
  }
  if (path == "/publish") {
    if (req.method != "POST")
      r.respond(not_allowed("POST"));
    else
      publish(req, std::move(r));
    return true;
  }
  if (path.substr(0, 9) == "/publish/") {
    const std::string_view id = id_from_path(path);
    if (req.method != "DELETE")
      r.respond(not_allowed("DELETE"));
    else if (id.empty())
      r.respond(json_response(404, error_json("not_found", "no such push")));
    else
      cancel(id, caller_of(req), std::move(r));
    return true;
  }
  if (path == "/sse") {
    if (req.method != "GET")
      r.respond(not_allowed("GET"));
    else
      open_sse(req, std::move(r));
    return true;
  }
  return false;
}

void Node::publish(const http::Request& req, http::Responder r) {
  // Only JSON: a cross-site form (text/plain, urlencoded, multipart) can
  // post without a CORS preflight; application/json cannot.
  if (!is_json_content_type(req.header("Content-Type"))) {
    ++stats_.publish_refused;
    r.respond(json_response(415, error_json("unsupported_media_type",
                                            "POST /publish takes Content-Type: application/json")));
    return;
  }
  auto parsed =
      parse_publish(req.body, broker_.limits(), config_.max_delay, chat_config_.max_json_depth);
  if (const auto* bad = std::get_if<ApiError>(&parsed)) {
    ++stats_.publish_refused;
    r.respond(json_response(bad->status, error_json(bad->code, bad->message)));
    return;
  }
  auto& p = std::get<PublishRequest>(parsed);
  // Responders are move-only; the callbacks are std::functions.
  auto answer = std::make_shared<http::Responder>(std::move(r));
  if (p.delay_ms == 0) {
    publish_now(std::move(p), std::move(answer));
    return;
  }
  // From the queue's acceptance clock: pushes accepted one after another
  // with one delay are due one after another (delayed_queue.h, "Order").
  const auto due = queue_.accept_time() + std::chrono::milliseconds(p.delay_ms);
  const std::error_code refused = queue_.schedule(
      std::move(p.channel), std::move(p.data), due, caller_of(req).key_id,
      [this, answer](std::error_code ec, const push::DelayedPush& stored) {
        if (ec == heartwheel::errc::limit_reached) {  // --max-delayed-per-key
          ++stats_.publish_capped;
          answer->respond(json_response(
              429, error_json("limit_exceeded",
                              "this API key has " +
                                  std::to_string(config_.delayed.max_pending_per_owner) +
                                  " pushes waiting for delivery (--max-delayed-per-key); cancel "
                                  "one or wait for one to be delivered")));
          return;
        }
        if (ec) {
          ++stats_.publish_unavailable;
          answer->respond(unavailable(ec));
          return;
        }
        ++stats_.publish_accepted;
        answer->respond(json_response(202, accepted_json(stored.id, push::to_unix_ms(stored.due))));
      });
  if (refused) {
    ++stats_.publish_unavailable;
    answer->respond(unavailable(refused));
  }
}

// An immediate publication skips the delayed queue: the broker's one
// script gives it its offset in Redis before the 202, so publications get
// their offsets in the order they were accepted, on this node and across
// nodes (README.md, "Order"). Through the delayed queue it would wait for a
// wheel tick and a claim, and two nodes' claims race.
void Node::publish_now(PublishRequest p, std::shared_ptr<http::Responder> answer) {
  const std::int64_t accepted_ms = push::to_unix_ms(push::WallClock::now());
  pubsub::PublishOptions options;  // a retry with its key: the first's offset
  options.idempotency_key = std::move(p.idempotency_key);
  hub_.publish(p.channel, std::move(p.data), {}, options,
               [this, answer = std::move(answer), accepted_ms](pubsub::PublishResult result) {
                 if (result.error) {
                   ++stats_.publish_unavailable;
                   answer->respond(unavailable(result.error));
                   return;
                 }
                 ++stats_.publish_accepted;
                 ++(result.duplicate ? stats_.delivered_already : stats_.delivered);
                 answer->respond(json_response(
                     202, published_json(push::random_id(), accepted_ms, result.position.offset,
                                         result.position.epoch)));
               });
}

void Node::cancel(std::string_view id, const Caller& caller, http::Responder r) {
  auto answer = std::make_shared<http::Responder>(std::move(r));
  // Another key's push answers 404 like an unknown one: no probing for ids.
  const std::error_code refused =
      queue_.cancel(id, caller.cancel_owner(), [this, answer](std::error_code ec, bool cancelled) {
        if (ec) {
          answer->respond(unavailable(ec));
        } else if (cancelled) {
          ++stats_.cancels_done;
          answer->respond(http::Response{204, {}, {}});
        } else {
          ++stats_.cancels_missed;
          answer->respond(json_response(
              404, error_json("not_found", "no such push, or it was already delivered")));
        }
      });
  if (refused) answer->respond(unavailable(refused));
}

void Node::open_sse(const http::Request& req, http::Responder r) {
  r.clear_deadline();  // a stream: the request timeout bounded only its arrival
  std::optional<std::string> channel;
  try {  // percent-decoded: "private%3Aceo" names private:ceo
    channel = req.query_value("channel");
  } catch (const std::invalid_argument& e) {
    r.respond(json_response(400, error_json("bad_request", e.what())));
    return;
  }
  if (!channel || channel->empty()) {
    r.respond(json_response(400, error_json("bad_request", "GET /sse?channel=NAME")));
    return;
  }
  std::optional<heartwheel::Duration> expires_in;
  if (const auto refused = auth_.check_sse(req, *channel, expires_in)) {
    ++stats_.sse_refused;
    r.respond(json_response(refused->status, error_json(refused->code, refused->message)));
    return;
  }
  std::optional<std::uint64_t> last;
  const std::string* header = req.header("Last-Event-ID");
  const auto query_last = req.query_param("last_event_id");  // for clients without headers
  const std::string_view text = header       ? std::string_view(*header)
                                : query_last ? *query_last
                                             : std::string_view();
  if (!text.empty()) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size()) {
      r.respond(json_response(
          400, error_json("bad_request", "Last-Event-ID must be an offset (an integer)")));
      return;
    }
    last = v;
  }
  heartwheel::TimerService* timers = r.timers();
  if (timers == nullptr) return;  // the request is gone already
  auto stream = std::make_unique<SseStream>(std::move(r), *timers, config_.sse, stats_.sse,
                                            [this](SseStream& s) { streams_.erase(&s); });
  SseStream* s = stream.get();
  streams_.emplace(s, std::move(stream));
  if (expires_in) s->expire_at(heartwheel::deadline_after(timers->now(), *expires_in));
  s->start(hub_, *channel, last);  // a refusal ends it (released on the wheel)
}

// The claim is acknowledged once the broker has taken the publication
// (stored in the channel's stream and sent to every node); a broker that
// refuses (Redis unavailable) leaves the claim to its lease, and the push
// is delivered again later.
//
// Delivery and acknowledgement are two Redis operations: a node cut off
// between them (or whose publish lands late) leaves the push to be claimed
// and delivered again. The publish is idempotent per push id, so that
// second delivery is answered with the first's offset and publishes
// nothing (docs/faults.md, delayed-partition). The key starts with \x01,
// which no caller's idempotency_key can (pubsub::is_caller_idempotency_key).
void Node::deliver(const push::DelayedPush& p, push::DeliveredCallback done) {
  pubsub::PublishOptions once;
  once.idempotency_key = "\x01push:" + p.id;
  hub_.publish(p.channel, p.data, {}, once,
               [this, done = std::move(done)](pubsub::PublishResult r) {
                 if (r.error)
                   ++stats_.deliver_refused;
                 else
                   ++(r.duplicate ? stats_.delivered_already : stats_.delivered);
                 done(!r.error);
               });
}

}  // namespace pushsrv
