// The engine's commands (command.h), whatever protocol read them: the budgets
// (requests in flight, rate limits), the connect gate, then subscribe,
// unsubscribe, publish, presence, presence stats and history on the hub.
// Each command gets exactly one answer, in command order; its codec makes
// the reply (and says when it ends the connection).
#include <heartwheel/net/connection.h>
#include <heartwheel/pubsub/limits.h>

#include "client.h"
#include "reply_limits.h"
#include "worker.h"

namespace chat {

namespace pubsub = heartwheel::pubsub;

namespace {
// The presence reply lists at most this many members (and says if cut).
constexpr std::size_t kMaxPresenceList = 1000;

Failure failure(const std::error_code& ec) { return {fault_of(ec), ec.message(), 0}; }
}  // namespace

void Worker::fill_reply(std::uint64_t key, std::uint64_t slot, Response reply) {
  const auto it = pending_.find(key);
  if (it == pending_.end()) return;  // not reached: the entry lives while a slot waits
  PendingReplies& p = it->second;
  p.waiting[static_cast<std::size_t>(slot - p.first)] = std::move(reply);
  while (!p.waiting.empty() && p.waiting.front()) {
    if (p.client != nullptr) send_reply(*p.client, *p.waiting.front());
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

Worker::Reply Worker::reserve_reply(Client& client, ReplyTo to) {
  PendingReplies& pending = pending_[client.key()];
  pending.client = &client;
  const std::uint64_t slot = pending.first + pending.waiting.size();
  pending.waiting.emplace_back();
  const Codec* codec = &codec_of(client.protocol());
  return [this, key = client.key(), slot, codec, to = std::move(to)](Answer answer) {
    if (to.server_side && to.op != Op::subscribe) return fill_reply(key, slot, {});  // a hold
    if (const auto* f = std::get_if<Failure>(&answer)) {
      ++stats_.errors[std::string(chat_error_code(to.op, f->fault))];
      if (f->fault == Fault::bad_json) ++stats_.bad_json;
    }
    fill_reply(key, slot, codec->answer(to, answer));
  };
}

void Worker::handle(Client& client, const Codec& codec, Item& item) {
  ReplyTo to;
  to.op = item.command ? item.command->op : item.op;
  to.id = item.command ? item.command->id : item.id;
  if (item.command) {
    to.channel = item.command->channel;
    to.newest_first = item.command->newest_first;
  }
  // Commands not yet answered (each may hold a command on the Redis link or
  // a call to the backend): past the budget, refused before anything runs.
  if (const auto it = pending_.find(client.key());
      it != pending_.end() && it->second.waiting.size() >= config_.max_requests_in_flight) {
    ++stats_.limits["requests_in_flight"];
    // docs/chat-protocol.md: our budget's refusal names no request.
    // Centrifugo's SDKs match replies by id (one without is a ping to them,
    // and the call would wait for its timeout): its reply keeps the id.
    if (codec.kind() == Codec::Kind::chat) to.id = nullptr;
    return reserve_reply(client, std::move(to))(Failure{
        Fault::requests_in_flight, "more than " + std::to_string(config_.max_requests_in_flight) +
                                       " requests waiting for their replies"});
  }
  const Reply reply = reserve_reply(client, std::move(to));
  // The connect comes first (Centrifugo's clients; ours with tokens).
  if (codec.connect_first(authenticating()) && !client.connected() &&
      (!item.command || item.command->op != Op::connect)) {
    ++stats_.requests["connect"];
    if (item.failure && codec.kind() == Codec::Kind::centrifuge)
      return reply(std::move(*item.failure));  // a command it cannot read: 3501 either way
    return reply(Failure{Fault::unauthorized,
                         codec.kind() == Codec::Kind::chat
                             ? "the first message must be {\"op\":\"connect\",\"token\":JWT}"
                             : "the first command must be a connect"});
  }
  if (item.failure) {
    if (item.failure->fault == Fault::unknown_op) ++stats_.requests["unknown"];
    return reply(std::move(*item.failure));
  }
  Command& cmd = *item.command;
  ++stats_.requests[std::string(op_name(cmd.op))];
  try {
    if (cmd.op == Op::connect && !client.connected() && codec.connect_first(authenticating()))
      return connect(client, cmd, reply);
    dispatch(client, cmd, reply);
  } catch (const std::invalid_argument& e) {
    reply(Failure{Fault::bad_request, e.what()});
  } catch (const std::exception& e) {
    reply(Failure{Fault::internal, e.what()});
  }
}

void Worker::dispatch(Client& client, Command& cmd, const Reply& reply) {
  const bool ours = client.protocol() == Codec::Kind::chat;
  switch (cmd.op) {
    case Op::connect:
      // Ours knows no connect without tokens (version 1), nor a second one.
      if (ours)
        return reply(
            Failure{Fault::unknown_op,
                    "unknown op; the ops are subscribe, unsubscribe, publish, presence, history"});
      return reply(Failure{Fault::bad_request, "already connected"});
    case Op::refresh:
      if (ours && !authenticating())
        return reply(
            Failure{Fault::unknown_op,
                    "unknown op; the ops are subscribe, unsubscribe, publish, presence, history"});
      return refresh(client, cmd, reply);
    case Op::sub_refresh:
      if (cmd.token.empty() && proxying(&ProxySettings::sub_refresh))
        return proxy_sub_refresh(client, cmd, reply);
      return sub_refresh(client, cmd, reply);
    case Op::ping:
      return reply(Done{});
    case Op::send:
      return reply(Done{});  // Centrifugo's send: no handler of ours (docs/centrifugo.md)
    case Op::rpc:
      if (proxying(&ProxySettings::rpc)) return proxy_rpc(client, cmd, reply);
      return reply(Failure{Fault::method_not_found, "no RPC handler (--proxy-rpc-endpoint)"});
    default:
      break;
  }
  // Presence stats share presence's bucket.
  if (const std::optional<RateOp> rated =
          rate_op(cmd.op == Op::presence_stats ? "presence" : op_name(cmd.op));
      rated && !within_rate(client, *rated)) {
    ++stats_.limits[std::string("rate_") +
                    std::string(kRateOpNames[static_cast<std::size_t>(*rated)])];
    return reply(Failure{Fault::rate_limited,
                         "over this connection's " + std::string(op_name(cmd.op)) + " rate, " +
                             config_.rate_limits.text(*rated) + " (--rate-limit)"});
  }
  if (reserved_channel(cmd.channel))
    return reply(Failure{Fault::permission_denied, "channels under __hw: are the server's own"});
  // With a proxy, the backend decides in place of the channel rules (a
  // channel token still decides its subscribe).
  if (cmd.op == Op::subscribe && cmd.token.empty() && proxying(&ProxySettings::subscribe))
    return proxy_subscribe(client, cmd, reply);
  if (cmd.op == Op::publish && proxying(&ProxySettings::publish))
    return proxy_publish(client, cmd, reply);
  if (std::optional<Failure> no = refused(client, cmd)) return reply(std::move(*no));
  switch (cmd.op) {
    case Op::subscribe:
      return subscribe(client, cmd, reply);
    case Op::unsubscribe:
      return unsubscribe(client, cmd, reply);
    case Op::publish:
      return publish(client, cmd, reply);
    case Op::presence:
      return presence(cmd, reply);
    case Op::presence_stats:
      return presence_stats(cmd, reply);
    case Op::history:
      return history(cmd, reply);
    default:
      break;
  }
  reply(Failure{Fault::internal, "not reached"});
}

void Worker::subscribe(Client& client, const Command& cmd, const Reply& reply) {
  pubsub::SubscribeOptions options;
  options.since = cmd.since;
  const bool recoverable = config_.history_size > 0;
  hub_->subscribe(client, cmd.channel, options,
                  [this, channel = cmd.channel, recovering = cmd.since.has_value(), recoverable,
                   key = client.key(), reply](pubsub::SubscribeResult r) {
                    if (r.error) return reply(failure(r.error));
                    // Not if the client closed or unsubscribed before the answer (the
                    // hub undid the join); the reply still says the subscribe succeeded.
                    if (Client* c = pending_client(key);
                        c != nullptr && hub_->subscribed(*c, channel)) {
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
                    SubscribeAnswer a;
                    a.position = std::move(r.position);
                    a.recovering = recovering;
                    a.recovered = r.recovered;
                    a.recoverable = recoverable;
                    a.publications = std::move(r.publications);
                    a.subscribers = r.subscribers;
                    reply(std::move(a));
                  });
}

void Worker::unsubscribe(Client& client, const Command& cmd, const Reply& reply) {
  if (const std::error_code ec = hub_->unsubscribe(client, cmd.channel)) return reply(failure(ec));
  roster_.remove(cmd.channel, client);
  reply(Done{});
}

void Worker::publish(Client& client, const Command& cmd, const Reply& reply) {
  if (!cmd.has_data)
    return reply(Failure{Fault::bad_request, "\"data\" is required (any JSON value)"});
  // The data is stored and pushed as this JSON text; the publisher's
  // presence info goes with it as "info".
  hub_->publish(cmd.channel, cmd.data, client.info(), [this, reply](pubsub::PublishResult r) {
    if (r.error) return reply(failure(r.error));
    ++stats_.publications;
    reply(PublishAnswer{std::move(r.position)});
  });
}

void Worker::presence(const Command& cmd, const Reply& reply) {
  if (const std::error_code ec = pubsub::validate_channel(cmd.channel, broker_.limits()))
    return reply(failure(ec));
  hub_->presence(cmd.channel, [this, channel = cmd.channel, reply](pubsub::PresenceResult r) {
    if (r.error) return reply(failure(r.error));
    PresenceAnswer a;
    a.count = r.subscribers;
    a.members = roster_.list(channel, kMaxPresenceList, a.total);
    std::size_t used = 0, shown = 0;
    for (; shown < a.members.size(); ++shown) {
      used += a.members[shown].info.size() + a.members[shown].client.size() + 4;
      if (used > reply_budget()) break;
    }
    if (shown < a.members.size()) ++stats_.limits["reply_truncated"];
    a.members.resize(shown);
    reply(std::move(a));
  });
}

void Worker::presence_stats(const Command& cmd, const Reply& reply) {
  if (const std::error_code ec = pubsub::validate_channel(cmd.channel, broker_.limits()))
    return reply(failure(ec));
  hub_->presence(cmd.channel, [this, channel = cmd.channel, reply](pubsub::PresenceResult r) {
    if (r.error) return reply(failure(r.error));
    // Users: this node's members (the broker counts subscribers, not users).
    reply(PresenceStatsAnswer{r.subscribers, roster_.users(channel, identified())});
  });
}

void Worker::history(const Command& cmd, const Reply& reply) {
  const std::size_t kept = config_.history_size;
  // No history kept on this server: an operation it lacks, as a namespace
  // with history off (Centrifugo's 108), not an empty answer.
  if (kept == 0) return reply(Failure{Fault::not_available, "this server keeps no history"});
  const std::size_t limit =
      cmd.limit ? static_cast<std::size_t>(std::min<std::uint64_t>(*cmd.limit, kept)) : kept;
  // Centrifugo's since and its oldest-first reads need the whole history.
  const bool whole = cmd.since || !cmd.newest;
  hub_->history(
      cmd.channel, whole ? kept : limit,
      [this, since = cmd.since, newest = cmd.newest, limit, reply](pubsub::HistoryResult r) {
        if (r.error) return reply(failure(r.error));
        auto& pubs = r.publications;
        if (since) {
          if (since->epoch != r.position.epoch && r.position.offset > 0)
            return reply(
                Failure{Fault::unrecoverable_position,
                        "the stream's epoch is " + r.position.epoch + ", not " + since->epoch});
          std::erase_if(pubs, [&](const pubsub::PublicationPtr& p) {
            return newest ? p->offset >= since->offset : p->offset <= since->offset;
          });
        }
        if (pubs.size() > limit) {
          if (newest)
            pubs.erase(pubs.begin(), pubs.end() - static_cast<std::ptrdiff_t>(limit));
          else
            pubs.resize(limit);
        }
        HistoryAnswer a;
        // The newest (or oldest) that fit in --max-reply-bytes; the reply says when cut.
        if (const std::size_t n = newest_that_fit(pubs, reply_budget()); n < pubs.size()) {
          ++stats_.limits["reply_truncated"];
          if (newest)
            pubs.erase(pubs.begin(), pubs.end() - static_cast<std::ptrdiff_t>(n));
          else
            pubs.resize(n);
          a.truncated = true;
        }
        a.top = std::move(r.position);
        a.publications = std::move(pubs);
        reply(std::move(a));
      });
}

// ---- --rate-limit (rate_limits.h) -------------------------------------------

namespace {
// The loop's cached time in ms (uv_now: no system call), as the buckets keep it.
std::uint32_t loop_ms(uv_loop_t* loop) noexcept { return static_cast<std::uint32_t>(uv_now(loop)); }
}  // namespace

bool Worker::within_rate(Client& client, RateOp op) {
  const std::uint32_t now = loop_ms(client.ws().net().loop());
  const auto [it, made] = rates_.try_emplace(client.key(), config_.rate_limits, now);
  return it->second.take(config_.rate_limits, op, now);
}

void Worker::forget_full_buckets(uv_loop_t* loop) {
  const std::uint32_t now = loop_ms(loop);
  std::erase_if(rates_, [&](const auto& entry) { return entry.second.full(config_.rate_limits, now); });
}

}  // namespace chat
