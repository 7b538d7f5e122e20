// The chat protocol's requests (docs/chat-protocol.md): one JSON text frame
// in, one reply out, carrying the request's id. A frame that is not JSON, or
// not a request, gets an error reply; the connection stays open.
#include <heartwheel/net/connection.h>
#include <heartwheel/pubsub/limits.h>

#include "bounded_json.h"
#include "client.h"
#include "reply_limits.h"
#include "protocol.h"
#include "worker.h"

namespace chat {

namespace pubsub = heartwheel::pubsub;

namespace {
// The presence reply lists at most this many members (and says if cut).
constexpr std::size_t kMaxPresenceList = 1000;

std::string position_fields(const pubsub::StreamPosition& p) {
  return ",\"offset\":" + std::to_string(p.offset) + ",\"epoch\":\"" + p.epoch + "\"";
}

// A non-negative integer field, or nullopt when absent; throws
// std::invalid_argument (a bad_request) when present and not one.
std::optional<std::uint64_t> count_field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  throw std::invalid_argument(std::string("\"") + key + "\" must be a non-negative integer");
}
}  // namespace

std::string Worker::error(const Json& id, std::string_view code, std::string_view message) {
  ++stats_.errors[std::string(code)];
  return error_reply(id, code, message);
}

void Worker::fill_reply(std::uint64_t key, std::uint64_t slot, std::string reply) {
  const auto it = pending_.find(key);
  if (it == pending_.end()) return;  // not reached: the entry lives while a slot waits
  PendingReplies& p = it->second;
  p.waiting[static_cast<std::size_t>(slot - p.first)] = std::move(reply);
  while (!p.waiting.empty() && p.waiting.front()) {
    // An empty reply is not sent (server-side subscriptions, worker_auth.cpp).
    if (p.client != nullptr && !p.waiting.front()->empty()) send_reply(*p.client, *p.waiting.front());
    p.waiting.pop_front();
    ++p.first;
  }
  // By key: a reply sent may have closed the connection, never touching the map.
  if (p.waiting.empty()) pending_.erase(key);
}

Client* Worker::pending_client(std::uint64_t key) const {
  const auto it = pending_.find(key);
  return it == pending_.end() ? nullptr : it->second.client;
}

Worker::Reply Worker::reserve_reply(Client& client) {
  PendingReplies& pending = pending_[client.key()];
  pending.client = &client;
  const std::uint64_t slot = pending.first + pending.waiting.size();
  pending.waiting.emplace_back();
  return [this, key = client.key(), slot](std::string r) { fill_reply(key, slot, std::move(r)); };
}

void Worker::handle(Client& client, std::string_view text) {
  const Reply reply = reserve_reply(client);
  // Requests not yet answered (each may hold a command on the Redis link):
  // past the budget, refused before anything is parsed.
  if (pending_[client.key()].waiting.size() > config_.max_requests_in_flight) {
    ++stats_.limits["requests_in_flight"];
    return reply(error(nullptr, "limit_exceeded",
                       "more than " + std::to_string(config_.max_requests_in_flight) +
                           " requests waiting for their replies"));
  }
  heartwheel::cli::BoundedJson parsed = heartwheel::cli::parse_bounded_json(text, config_.max_json_depth);
  if (parsed.status == heartwheel::cli::BoundedJson::Status::too_deep)
    return reply(error(nullptr, "too_deep",
                       "the frame nests arrays and objects more than " +
                           std::to_string(config_.max_json_depth) + " deep"));
  if (parsed.status != heartwheel::cli::BoundedJson::Status::ok) {
    ++stats_.bad_json;
    return reply(error(nullptr, "bad_json", "the frame is not JSON"));
  }
  const Json req = std::move(parsed.value);
  if (!req.is_object()) return reply(error(nullptr, "bad_request", "a request is a JSON object"));
  const Json id = req.contains("id") ? req["id"] : Json(nullptr);
  const auto op = req.find("op");
  if (op == req.end() || !op->is_string())
    return reply(error(id, "bad_request", "\"op\" must be a string"));
  try {
    dispatch(client, id, op->get<std::string>(), req, reply);
  } catch (const std::invalid_argument& e) {
    reply(error(id, "bad_request", e.what()));
  } catch (const std::exception& e) {
    reply(error(id, "internal", e.what()));
  }
}

void Worker::dispatch(Client& client, const Json& id, const std::string& op, const Json& req,
                      const Reply& reply) {
  if (auth_ && auth_->settings().authenticating() && op == "refresh") {
    ++stats_.requests[op];
    return refresh(client, id, req, reply);
  }
  if (op != "subscribe" && op != "unsubscribe" && op != "publish" && op != "presence" &&
      op != "history") {
    ++stats_.requests["unknown"];
    return reply(
        error(id, "unknown_op",
              "unknown op; the ops are subscribe, unsubscribe, publish, presence, history"));
  }
  ++stats_.requests[op];
  if (const std::optional<RateOp> rated = rate_op(op); rated && !within_rate(client, *rated)) {
    ++stats_.limits["rate_" + op];
    return reply(error(id, "limit_exceeded",
                       "over this connection's " + op + " rate, " +
                           config_.rate_limits.text(*rated) + " (--rate-limit)"));
  }
  const auto channel_it = req.find("channel");
  if (channel_it == req.end() || !channel_it->is_string())
    return reply(error(id, "bad_request", "\"channel\" must be a string"));
  const std::string channel = channel_it->get<std::string>();
  if (!permitted(client, id, op, channel, req, reply)) return;
  if (op == "subscribe") return subscribe(client, id, channel, req, reply);
  if (op == "unsubscribe") return reply(unsubscribe(client, id, channel));
  if (op == "publish") return publish(client, id, channel, req, reply);
  if (op == "presence") return presence(id, channel, reply);
  history(id, channel, req, reply);
}

void Worker::subscribe(Client& client, const Json& id, const std::string& channel, const Json& req,
                       const Reply& reply) {
  pubsub::SubscribeOptions options;
  if (const auto since = req.find("since"); since != req.end() && !since->is_null()) {
    const auto epoch = since->is_object() ? since->find("epoch") : since->end();
    const auto offset = since->is_object() ? count_field(*since, "offset") : std::nullopt;
    if (!since->is_object() || !offset || epoch == since->end() || !epoch->is_string())
      return reply(error(id, "bad_request", "\"since\" must be {\"offset\": N, \"epoch\": \"E\"}"));
    options.since = pubsub::StreamPosition{*offset, epoch->get<std::string>()};
  }
  hub_->subscribe(
      client, channel, options,
      [this, id, channel, key = client.key(), reply](pubsub::SubscribeResult r) {
        if (r.error) return reply(error(id, error_code_name(r.error), r.error.message()));
        // Not if the client closed or unsubscribed before the answer (the
        // hub undid the join); the reply still says the subscribe succeeded.
        if (Client* c = pending_client(key); c != nullptr && hub_->subscribed(*c, channel)) {
          roster_.add(channel, *c);
        }
        // Recovered publications are in the reply, oldest first; live ones
        // follow it (the hub never delivers before the answer). All or
        // none: more than a reply may hold is no recovery (reply_limits.h).
        if (r.recovered && publications_json_bytes(r.publications) > reply_budget()) {
          ++stats_.limits["recovery_cut"];
          r.recovered = false;
          r.publications.clear();
        }
        reply(ok_reply(id, position_fields(r.position) +
                               ",\"recovered\":" + (r.recovered ? "true" : "false") +
                               ",\"publications\":" + publications_json(r.publications) +
                               ",\"count\":" + std::to_string(r.subscribers)));
      });
}

std::string Worker::unsubscribe(Client& client, const Json& id, const std::string& channel) {
  if (const std::error_code ec = hub_->unsubscribe(client, channel))
    return error(id, error_code_name(ec), ec.message());
  roster_.remove(channel, client);
  return ok_reply(id);
}

void Worker::publish(Client& client, const Json& id, const std::string& channel, const Json& req,
                     const Reply& reply) {
  const auto data = req.find("data");
  if (data == req.end())
    return reply(error(id, "bad_request", "\"data\" is required (any JSON value)"));
  // The data is stored and pushed as this JSON text; the publisher's
  // presence info goes with it as "info".
  hub_->publish(channel, data->dump(), client.info(), [this, id, reply](pubsub::PublishResult r) {
    if (r.error) return reply(error(id, error_code_name(r.error), r.error.message()));
    ++stats_.publications;
    reply(ok_reply(id, position_fields(r.position)));
  });
}

void Worker::presence(const Json& id, const std::string& channel, const Reply& reply) {
  if (const std::error_code ec = pubsub::validate_channel(channel, broker_.limits()))
    return reply(error(id, error_code_name(ec), ec.message()));
  hub_->presence(channel, [this, id, channel, reply](pubsub::PresenceResult r) {
    if (r.error) return reply(error(id, error_code_name(r.error), r.error.message()));
    std::size_t total = 0;
    const std::vector<std::string> members = roster_.list(channel, kMaxPresenceList, total);
    const std::size_t shown = members_that_fit(members, reply_budget());
    if (shown < members.size()) ++stats_.limits["reply_truncated"];
    std::string fields = ",\"count\":" + std::to_string(r.subscribers) + ",\"clients\":[";
    for (std::size_t i = 0; i < shown; ++i) fields += (i ? "," : "") + members[i];
    fields += ']';
    // Cut (by --max-reply-bytes or the 1,000-member cap): the reply says how
    // many it carries, as history's does.
    if (total > shown) fields += ",\"truncated\":true,\"limit\":" + std::to_string(shown);
    reply(ok_reply(id, fields));
  });
}

void Worker::history(const Json& id, const std::string& channel, const Json& req,
                     const Reply& reply) {
  const std::optional<std::uint64_t> asked = count_field(req, "limit");
  const std::size_t limit =
      asked ? static_cast<std::size_t>(std::min<std::uint64_t>(*asked, config_.history_size))
            : config_.history_size;
  hub_->history(channel, limit, [this, id, reply](pubsub::HistoryResult r) {
    if (r.error) return reply(error(id, error_code_name(r.error), r.error.message()));
    // The newest that fit in --max-reply-bytes; the reply says when cut.
    std::string cut;
    if (const std::size_t n = newest_that_fit(r.publications, reply_budget());
        n < r.publications.size()) {
      ++stats_.limits["reply_truncated"];
      r.publications.erase(r.publications.begin(),
                           r.publications.end() - static_cast<std::ptrdiff_t>(n));
      cut = ",\"truncated\":true,\"limit\":" + std::to_string(n);
    }
    reply(ok_reply(id, position_fields(r.position) + ",\"publications\":" +
                           publications_json(r.publications) + cut));
  });
}

// ---- --rate-limit (rate_limits.h) -------------------------------------------

namespace {
// The loop's cached time in ms (uv_now: no system call), as the buckets keep it.
std::uint32_t loop_ms(uv_loop_t* loop) noexcept { return static_cast<std::uint32_t>(uv_now(loop)); }
}  // namespace

bool Worker::within_rate(Client& client, RateOp op) {
  const std::uint32_t now = loop_ms(client.ws.net().loop());
  const auto [it, made] = rates_.try_emplace(client.key(), config_.rate_limits, now);
  return it->second.take(config_.rate_limits, op, now);
}

void Worker::forget_full_buckets(uv_loop_t* loop) {
  const std::uint32_t now = loop_ms(loop);
  std::erase_if(rates_, [&](const auto& entry) { return entry.second.full(config_.rate_limits, now); });
}

}  // namespace chat
