// RedisBroker: channels on the broker's thread. Joins wait for a read round
// (one atomic script: the channel's top, epoch and the stream entries after
// an offset); live messages from Redis are posted in offset order, buffered
// while a round is in flight, and a gap or a new epoch starts a round that
// fills it from the stream. See redis_broker.h, "Fan-out and order".
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/redis/stream.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <string_view>

#include "redis_broker_core.h"

namespace heartwheel::pubsub {

using detail::WireMessage;

namespace {

// Which publication stands at an offset, as far as one node can tell: its
// data and its publisher's info (a stream entry carries nothing else). Never
// 0 (0 is "not known").
std::uint64_t digest(std::string_view data, std::string_view info) {
  const std::uint64_t d = std::hash<std::string_view>{}(data);
  const std::uint64_t i = std::hash<std::string_view>{}(info);
  return (d ^ (i + 0x9e3779b97f4a7c15ULL + (d << 6) + (d >> 2))) | 1;
}

}  // namespace

RedisBroker::Core::Channel* RedisBroker::Core::find(std::string_view name) {
  auto it = channels_.find(std::string(name));
  return it == channels_.end() ? nullptr : it->second.get();
}

RedisBroker::Core::Channel& RedisBroker::Core::channel_for(const std::string& name) {
  if (Channel* ch = find(name)) return *ch;
  auto made = std::make_unique<Channel>(this, name);
  Channel& ch = *made;
  channels_.emplace(name, std::move(made));
  subscriber_->subscribe(ch.keys.channel);  // on_subscribed starts the first round
  if (options_.redis.command_timeout.count() > 0)
    wheel_->schedule(ch, options_.redis.command_timeout);
  return ch;
}

void RedisBroker::Core::Channel::subscribe_timed_out(TimerEntry& e) {
  auto& ch = static_cast<Channel&>(e);
  if (ch.subscribed) return;
  Core& core = *ch.core;
  while (!ch.waiters.empty()) {
    std::shared_ptr<Waiter> w = std::move(ch.waiters.front());
    ch.waiters.pop_front();
    ++core.stats_.join_errors;
    SubscribeResult r;
    r.error = errc::unavailable;
    core.complete(w->inbox, [done = std::move(w->done), r] { done(r); });
  }
  ch.buffered.clear();
  core.release_if_idle(ch);  // may free ch
}

void RedisBroker::Core::join(Inbox* inbox, std::string channel, std::string info, bool first_local,
                             std::optional<StreamPosition> since, JoinDone done) {
  ++stats_.joins;
  if (halted_) {
    ++stats_.join_errors;
    SubscribeResult r;
    r.error = errc::unavailable;
    complete(inbox, [done, r] { done(r); });
    return;
  }
  Channel& ch = channel_for(channel);
  auto w = std::make_shared<Waiter>();
  w->inbox = inbox;
  w->first_local = first_local;
  w->since = std::move(since);
  w->done = std::move(done);
  ch.waiters.push_back(w);
  w->info = std::move(info);
  maybe_round(ch);
}

// The join counted in Redis (and its join event published). Sent only once
// the channel is subscribed, so this node hears its own join event, and
// before the round's read, whose reply then comes after this one.
void RedisBroker::Core::count_join(Channel& ch, const std::shared_ptr<Waiter>& w) {
  w->presence_sent = true;
  const char* join_leave = options_.channel.join_leave ? "1" : "0";
  auto refused = send(
      detail::presence_script().call(
          {ch.keys.counts, ch.keys.leases, ch.keys.meta},
          {"j", options_.node_id, "0", lease_ms_, ch.keys.channel, w->info, join_leave, ttl_ms_,
           publish_verb_}),
      [w](std::error_code ec, redis::Reply reply) {
        w->presence_done = true;
        if (ec || !reply.is_integer())
          w->error = errc::unavailable;
        else
          w->subscribers = static_cast<std::uint64_t>(reply.integer());
      });
  if (refused) {
    w->presence_done = true;
    w->error = errc::unavailable;
  }
}

void RedisBroker::Core::leave(Inbox* inbox, const std::string& channel, const std::string& info,
                              bool last_local) {
  Channel* ch = find(channel);
  if (ch == nullptr) return;
  // A leave while a join of the same hub waits undoes that join (the hub
  // went away, or cancelled it): it is not counted when it completes.
  auto pending = std::find_if(ch->waiters.rbegin(), ch->waiters.rend(),
                              [&](const auto& w) { return w->inbox == inbox && !w->cancelled; });
  if (pending != ch->waiters.rend()) {
    (*pending)->cancelled = true;
  } else if (ch->local > 0) {
    --ch->local;
  }
  if (last_local) std::erase(ch->inboxes, inbox);
  const char* join_leave = options_.channel.join_leave ? "1" : "0";
  (void)send(detail::presence_script().call({ch->keys.counts, ch->keys.leases, ch->keys.meta},
                                            {"l", options_.node_id, "0", lease_ms_,
                                             ch->keys.channel, info, join_leave, ttl_ms_,
                                             publish_verb_}),
             {});
  release_if_idle(*ch);
}

void RedisBroker::Core::release_if_idle(Channel& ch) {
  if (!ch.inboxes.empty() || !ch.waiters.empty() || ch.syncing) return;
  subscriber_->unsubscribe(ch.keys.channel);
  channels_.erase(ch.name);  // frees ch
}

// ---- rounds -------------------------------------------------------------------------

void RedisBroker::Core::maybe_round(Channel& ch) {
  if (!ch.subscribed) return;  // on_subscribed starts it
  if (ch.syncing) {
    ch.again = true;
    return;
  }
  start_round(ch);
}

void RedisBroker::Core::start_round(Channel& ch) {
  ch.again = false;
  ch.syncing = true;
  ++stats_.syncs;
  // Read from the first offset anyone needs: the hubs' next one (to fill a
  // gap) and each joiner's since + 1.
  std::uint64_t from = std::numeric_limits<std::uint64_t>::max();
  // From the top itself when its publication is known: complete_round
  // checks that the stream still holds that one there.
  if (ch.synced && !ch.inboxes.empty()) from = ch.top_digest != 0 ? ch.top : ch.top + 1;
  for (auto& w : ch.waiters) {
    w->in_round = true;
    if (!w->presence_sent) count_join(ch, w);
    if (w->since) from = std::min(from, w->since->offset + 1);
  }
  if (from == std::numeric_limits<std::uint64_t>::max()) from = 0;
  const std::string name = ch.name;
  auto refused = send(detail::read_script().call({ch.keys.meta, ch.keys.stream},
                                                 {std::to_string(from), new_epoch(), ttl_ms_}),
                      [this, name, from](std::error_code ec, redis::Reply reply) {
                        if (Channel* c = find(name)) on_round(*c, from, ec, std::move(reply));
                      });
  if (refused) fail_round(ch, false);
}

void RedisBroker::Core::on_round(Channel& ch, std::uint64_t from, std::error_code ec,
                                 redis::Reply reply) {
  std::vector<redis::StreamEntry> entries;
  if (ec || !reply.is_array() || reply.size() != 5 ||
      redis::parse_entries(std::move(reply.elements()[2]), entries))
    return fail_round(ch, true);
  EpochRead state;
  state.top = static_cast<std::uint64_t>(reply[0].integer());
  state.epoch = std::string(reply[1].str());
  state.base = static_cast<std::uint64_t>(reply[3].integer());
  state.previous = std::string(reply[4].str());
  std::vector<PublicationPtr> read;
  read.reserve(entries.size());
  for (const auto& e : entries)
    if (auto p = detail::to_publication(ch.name, state.epoch, e)) read.push_back(std::move(p));
  complete_round(ch, from, state, read);
}

void RedisBroker::Core::complete_round(Channel& ch, std::uint64_t from, const EpochRead& state,
                                       const std::vector<PublicationPtr>& read) {
  ch.syncing = false;
  const std::uint64_t top = state.top;
  const std::string& epoch = state.epoch;
  if (ch.synced && epoch == ch.epoch && top < ch.top) return rewind(ch);
  // The stream holds another publication at the top the hubs have: what
  // they got there came from a stream that is gone (an old master's
  // messages, sent before a failover and delivered after it, while the new
  // master gave the same offsets to other publications). Like a stream
  // that went back: a new epoch, so that subscribers reload.
  if (ch.synced && epoch == ch.epoch && ch.top_digest != 0 && from <= ch.top)
    for (const auto& p : read)
      if (p->offset == ch.top) {
        if (digest(p->data, p->info) != ch.top_digest) return rewind(ch);
        break;
      }
  if (ch.synced && epoch != ch.epoch) {
    // A new epoch. Made by a rewind of the one the hubs are in (ours or
    // another node's): the stream was kept and the epoch starts at its
    // base, so the hubs continue after what they had of it, min(top,
    // base); offsets they had beyond the base are the lost ones, and
    // offsets up to it they missed are filled from the stream below (a
    // trimmed hole counted in lost). Any other (Redis lost the channel:
    // base 0; or an epoch after one we never saw): from its offset 1.
    // Either way flagged, so that hubs adopt the epoch and clients reload.
    // Read from there first if this round read from further on; the joins
    // of this round wait for that read.
    ++stats_.epoch_changes;
    ch.top = state.previous == ch.epoch ? std::min(ch.top, state.base) : 0;
    ch.epoch = epoch;
    ch.reset_epoch = !ch.inboxes.empty();
    if ((from == 0 || from > ch.top + 1) && top > ch.top && !ch.inboxes.empty()) {
      for (auto& w : ch.waiters) w->in_round = false;
      start_round(ch);
      return;
    }
  }
  // What the hubs have not had yet, from the stream; a hole the stream no
  // longer covers is counted, never hidden.
  if (!ch.inboxes.empty() && top > ch.top) {
    std::uint64_t next = ch.top + 1;
    ch.epoch = epoch;
    for (const auto& p : read) {
      if (p->offset < next || p->offset > top) continue;
      stats_.lost += p->offset - next;
      auto pub = std::make_shared<Publication>(*p);
      if (options_.encode_publication) {
        try {
          pub->frame = options_.encode_publication(*pub);
        } catch (...) {
          ++stats_.decode_errors;
        }
      }
      post(ch, pub);
      ++stats_.filled_from_stream;
      next = p->offset + 1;
    }
    stats_.lost += top + 1 - next;
  }
  ch.top = std::max(ch.top, top);
  if (!ch.synced) ch.top = top;
  ch.epoch = epoch;
  ch.synced = true;
  ch.top_digest = 0;  // the stream's entry at the new top, when this read has it
  for (const auto& p : read)
    if (p->offset == ch.top) ch.top_digest = digest(p->data, p->info);

  // The joins of this round, in order: each answered at the top just read,
  // after everything up to it was posted (broker.h, contract 2).
  while (!ch.waiters.empty() && ch.waiters.front()->in_round) {
    std::shared_ptr<Waiter> w = std::move(ch.waiters.front());
    ch.waiters.pop_front();
    SubscribeResult r;
    if (w->error) {
      ++stats_.join_errors;
      r.error = w->error;
      complete(w->inbox, [done = std::move(w->done), r] { done(r); });
      continue;
    }
    r.position = {ch.top, ch.epoch};
    r.subscribers = w->subscribers;
    if (w->since) {
      const std::uint64_t after = w->since->offset;
      bool whole = w->since->epoch == ch.epoch && after <= ch.top;
      std::uint64_t next = after + 1;
      for (const auto& p : read) {
        if (!whole || p->offset > ch.top) break;
        if (p->offset < next) continue;
        if (p->offset != next) whole = false;
        r.publications.push_back(p);
        ++next;
      }
      r.recovered = whole && next == ch.top + 1;
      if (!r.recovered) r.publications.clear();
    }
    if (w->first_local) {
      bool attached;
      {
        std::lock_guard lock(inbox_mu_);
        attached = attached_.count(w->inbox) != 0;
      }
      if (attached && !w->cancelled &&
          std::find(ch.inboxes.begin(), ch.inboxes.end(), w->inbox) == ch.inboxes.end())
        ch.inboxes.push_back(w->inbox);
      r.seq = seq_;
    }
    if (!w->cancelled) ++ch.local;
    complete(w->inbox, [done = std::move(w->done), r = std::move(r)] { done(r); });
  }
  // Live messages that came during the round, in order (a gap among them
  // starts the next round).
  std::vector<WireMessage> buffered = std::move(ch.buffered);
  ch.buffered.clear();
  for (auto& m : buffered) {
    if (m.kind == EventKind::publication && m.epoch != ch.epoch) {
      ++stats_.duplicates;  // from a stream that is gone
      continue;
    }
    on_live(ch, std::move(m));
  }
  if (!ch.syncing && (ch.again || !ch.waiters.empty())) start_round(ch);
  if (!ch.syncing) release_if_idle(ch);
}

// The stream went back: the hubs have had offsets up to ch.top, Redis's
// top is lower in the same epoch. A failover lost writes that its old
// master had published (replication is asynchronous): the new master would
// give those offsets to new publications, which every node that saw the
// old ones would drop as duplicates. So the channel gets a new epoch that
// starts at the surviving top (its base) and keeps the stream: history
// still holds every publication that survived, acknowledged ones included,
// and new publications continue after the base. Subscribers are told
// (new_epoch on the next event; recovery from the old epoch answers
// recovered false, so clients reload history), and the next round carries
// the hubs on from the base without delivering the kept entries again
// (complete_round). Live messages wait meanwhile.
void RedisBroker::Core::rewind(Channel& ch) {
  ++stats_.rewinds;
  ch.syncing = true;
  const std::string name = ch.name;
  auto refused = send(detail::reset_script().call({ch.keys.meta, ch.keys.stream},
                                                  {ch.epoch, new_epoch(), ttl_ms_}),
                      [this, name](std::error_code, redis::Reply) {
                        Channel* c = find(name);
                        if (c == nullptr) return;
                        for (auto& w : c->waiters) w->in_round = false;
                        start_round(*c);  // a failed reset: the read finds it again
                      });
  if (refused) fail_round(ch, false);
}

// Redis did not answer (down, timed out): the joins of the round fail with
// unavailable; the channel keeps what it knows, and the next message, join
// or reconnect tries again.
void RedisBroker::Core::fail_round(Channel& ch, bool may_release) {
  ch.syncing = false;
  while (!ch.waiters.empty() && ch.waiters.front()->in_round) {
    std::shared_ptr<Waiter> w = std::move(ch.waiters.front());
    ch.waiters.pop_front();
    ++stats_.join_errors;
    SubscribeResult r;
    r.error = errc::unavailable;
    complete(w->inbox, [done = std::move(w->done), r] { done(r); });
  }
  std::vector<WireMessage> buffered = std::move(ch.buffered);
  ch.buffered.clear();
  if (ch.synced) {
    for (auto& m : buffered) {
      if (m.kind != EventKind::publication || m.offset == ch.top + 1) {
        if (m.kind == EventKind::publication) {
          ch.top = m.offset;
          ch.top_digest = digest(m.data, m.info);
        }
        auto e = make_publication(ch, std::move(m), true);
        post(ch, e);
      } else if (m.offset > ch.top + 1) {
        ch.again = true;  // a hole we could not fill now
      }
    }
  }
  if (!ch.waiters.empty()) start_round(ch);
  if (may_release && !ch.syncing) release_if_idle(ch);
}

// ---- messages from Redis ------------------------------------------------------------

// A first confirmation starts the channel's first round; a confirmation
// again (after a reconnect, a failover or a moved slot: the subscription
// was lost for a while) starts a round that reads what was published
// meanwhile from the stream.
void RedisBroker::Core::on_subscribed(std::string_view redis_channel, bool again) {
  const auto name = layout_.channel_of(redis_channel);
  Channel* ch = name ? find(*name) : nullptr;
  if (ch == nullptr || (ch->subscribed && !again)) return;
  ch->subscribed = true;
  wheel_->cancel(*ch);
  maybe_round(*ch);
}

void RedisBroker::Core::on_message(const redis::Message& m) {
  const auto name = layout_.channel_of(m.channel);
  Channel* ch = name ? find(*name) : nullptr;
  if (ch == nullptr) return;
  auto decoded = detail::decode_message(m.payload);
  if (!decoded) {
    ++stats_.decode_errors;
    return;
  }
  ++stats_.messages;
  on_live(*ch, std::move(*decoded));
}

void RedisBroker::Core::on_live(Channel& ch, WireMessage m) {
  if (ch.syncing || !ch.synced) {
    ch.buffered.push_back(std::move(m));
    return;
  }
  if (m.kind == EventKind::publication) {
    if (m.epoch == ch.epoch && m.offset <= ch.top) {
      ++stats_.duplicates;
      return;
    }
    if (m.epoch != ch.epoch || m.offset != ch.top + 1) {  // a gap or a new stream: read it
      ch.buffered.push_back(std::move(m));
      start_round(ch);
      return;
    }
    ch.top = m.offset;
    ch.top_digest = digest(m.data, m.info);
  }
  if (ch.inboxes.empty()) return;
  post(ch, make_publication(ch, std::move(m), true));
}

EventPtr RedisBroker::Core::make_publication(const Channel& ch, WireMessage&& m, bool encode) {
  if (m.kind == EventKind::publication) {
    auto p = std::make_shared<Publication>();
    p->kind = EventKind::publication;
    p->channel = ch.name;
    p->epoch = std::move(m.epoch);
    p->offset = m.offset;
    p->data = std::move(m.data);
    p->info = std::move(m.info);
    p->time = wheel_->now();
    if (encode && options_.encode_publication) {
      try {
        p->frame = options_.encode_publication(*p);
      } catch (...) {
        ++stats_.decode_errors;  // the hubs' own encoders get their chance
      }
    }
    return p;
  }
  auto e = std::make_shared<PresenceEvent>();
  e->kind = m.kind;
  e->channel = ch.name;
  e->epoch = ch.epoch;
  e->info = std::move(m.info);
  e->subscribers = m.count;
  if (encode && options_.encode_presence) {
    try {
      e->frame = options_.encode_presence(*e);
    } catch (...) {
      ++stats_.decode_errors;
    }
  }
  return e;
}

// One envelope per interested hub, under the inbox lock so that a hub
// detaching meanwhile is never posted to.
void RedisBroker::Core::post(Channel& ch, const EventPtr& event) {
  ++seq_;
  const bool reset = ch.reset_epoch;
  ch.reset_epoch = false;
  std::lock_guard lock(inbox_mu_);
  for (Inbox* inbox : ch.inboxes) {
    if (attached_.count(inbox) == 0) continue;
    auto* e = new Envelope;
    e->event = event;
    e->seq = seq_;
    e->new_epoch = reset;
    inbox->post(e);
    ++stats_.posted;
  }
}

}  // namespace heartwheel::pubsub
