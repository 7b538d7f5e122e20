// heartwheel/pubsub/broker.h - the seam between hubs and whatever orders,
// stores and carries publications: the in-process Bus (bus.h), or Redis for
// several nodes (redis_broker.h).
//
// What a broker owns
//   - Order: each channel's events get one sequence, one offset per
//     publication (1, 2, 3, ...), in one order that every hub sees.
//   - History: the bounded history (size, TTL) per channel, epochs, recovery.
//   - Presence: the subscriber count per channel over every hub, join/leave.
//   - Fan-out between hubs: it posts each event, as an Envelope, into the
//     Inbox of every hub that has subscribers of the channel, in that order.
//   A hub owns only its local subscribers and their delivery (hub.h).
//
// Answers are completions
//   publish, join, history and presence answer through a callback (`done`),
//   because a broker on a remote store (Redis) learns the answer from a
//   reply. `done` runs exactly once, on the hub's loop thread, in one of two
//   ways, and a broker says which by completes_inline():
//     - inline (the Bus): before the call returns, outside any broker lock;
//     - through the inbox (RedisBroker): the broker posts an Envelope whose
//       `completion` is set (post_completion() below); the hub runs it in
//       inbox order, between events. Never from inside the call.
//   The one exception: after detach(inbox) nothing more is posted to it, and
//   completions still in the inbox are freed without running (the hub is
//   going away).
//   leave() needs no answer: it is applied in call order after the join.
//
// The contract a broker keeps (hubs rely on it)
//   1. For one channel, envelopes are posted to an inbox in increasing `seq`
//      order, and every event the broker orders after join(first_local)
//      completes, until leave(last_local), is posted to that inbox. `seq` is
//      unique per broker and channel over time (a hub drops envelopes at or
//      below what it has delivered: leftovers of an earlier interest).
//   2. No gap and no overlap between recovered and live publications:
//      - inline: join(first_local) answers the seq and offset of the last
//        event ordered before the inbox became interested; a later join
//        recovers only up to `upto`, the offset the hub has delivered;
//      - through the inbox: the join's completion is posted after every
//        envelope of the channel with an offset <= result.position.offset and
//        before every later one, and its publications end at that offset
//        (`upto` is ignored: when the hub runs the completion it has
//        delivered exactly up to there).
//   3. A channel's epoch does not change while an inbox is interested, except
//      when the broker's store lost the stream (Redis restarted without
//      persistence): the first event of the new stream then comes in an
//      envelope with `new_epoch` set, and the hub adopts its epoch (the
//      subscribers see the change in the events' epoch).
//   4. Joins of one inbox on one channel complete in call order, and so do
//      its publishes that the broker takes (one refused at once, e.g. for a
//      bad channel name, may be answered before earlier ones). Answers to different kinds of
//      requests, or joins of different channels, may come in another order
//      than asked: a caller that promises its clients request order keeps
//      its own queue (heartwheel-chat's ReplyQueue).
//
// Threads: every Broker method may be called from any thread (hubs call them
//   on their loop threads). Inbox::post() is called from any thread; the
//   inbox (a Hub) consumes on its own thread.
#pragma once

#include <heartwheel/common/detail/mpsc_queue.h>
#include <heartwheel/pubsub/event.h>
#include <heartwheel/pubsub/limits.h>
#include <heartwheel/common/time.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::pubsub {

// One event on its way to one hub. Allocated by the broker, one per
// interested hub per event (never per subscriber); owned by the inbox once
// posted, which deletes it after delivery.
struct Envelope : heartwheel::detail::MpscNode {
  EventPtr event;
  std::uint64_t seq = 0;   // the event's place in its channel's order (see contract 1)
  bool new_epoch = false;  // the channel's stream restarted: adopt event->epoch (contract 3)
  // Set instead of `event`: a broker's answer to run on the hub's thread, in
  // inbox order (see "Answers are completions").
  std::function<void()> completion;
};

// Where a broker delivers envelopes: implemented by Hub.
class Inbox {
 public:
  // Takes ownership of `envelope` and wakes the consumer (at most one wake-up
  // per batch). Any thread; wait-free apart from that wake-up.
  virtual void post(Envelope* envelope) noexcept = 0;

 protected:
  ~Inbox() = default;
};

struct PublishResult {
  // errc::empty_channel .. data_too_large: nothing published. A remote
  // broker adds its own (errc::unavailable: the store could not be reached
  // in time; it may or may not have taken the publication).
  std::error_code error;
  StreamPosition position;  // the publication's offset and epoch; {0, ""} when the
                            // channel had neither subscribers nor history (no one heard it)
  // PublishOptions::idempotency_key: an earlier publish of the channel had
  // the key; nothing was published now, `position` is that one's.
  bool duplicate = false;
};

// How a publish is made, beyond its data.
struct PublishOptions {
  // A publish whose key a publish of the same channel had within
  // idempotency_window is not published again: its result is the first one's
  // (PublishResult::duplicate). Across every hub and node of the broker
  // (Redis: a key of the channel's slot, set in the publish script).
  // Centrifugo's idempotency_key. A publish nobody could hear (no
  // subscribers, no history: offset 0) leaves no key. Empty: none.
  std::string idempotency_key;
  Duration idempotency_window = std::chrono::minutes(5);
};

// A caller's idempotency key (an API's idempotency_key): 1 to 256 bytes
// without control characters. Keys with one are the server's own
// (heartwheel-push's delayed deliveries key theirs by "\x01" and the push
// id), so no caller's key can be taken for one of them.
constexpr std::size_t kMaxIdempotencyKeyBytes = 256;
constexpr bool is_caller_idempotency_key(std::string_view key) noexcept {
  if (key.empty() || key.size() > kMaxIdempotencyKeyBytes) return false;
  for (const char c : key)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

struct HistoryResult {
  std::error_code error;                     // a bad channel name
  StreamPosition position;                   // the stream's top now ({0, ""}: no stream)
  std::vector<PublicationPtr> publications;  // oldest first
};

struct PresenceResult {
  std::error_code error;          // a bad channel name; errc::unavailable (remote broker)
  std::uint64_t subscribers = 0;  // over every hub (and node)
};

// What a hub asks when one of its subscribers joins a channel.
struct JoinRequest {
  std::string_view channel;
  std::string_view info;                // presence info for the join event
  bool first_local = false;             // the hub's first subscriber here: start posting to it
  std::uint64_t upto = 0;               // !first_local: the offset the hub has delivered up to
  std::optional<StreamPosition> since;  // recover the publications after this position
};

struct SubscribeResult {
  // errc::empty_channel .. wrong_hub (from Hub::subscribe): nothing changed.
  std::error_code error;
  StreamPosition position;  // live delivery continues after this offset, in this epoch
  std::uint64_t seq = 0;    // for the hub: with first_local, the seq of the last event
                            // ordered before interest began
  bool recovered = false;   // with `since`: every publication after it is in `publications`
  std::vector<PublicationPtr> publications;  // recovered ones, oldest first
  std::uint64_t subscribers = 0;             // presence after the join
};

using PublishDone = std::function<void(PublishResult)>;
using JoinDone = std::function<void(SubscribeResult)>;
using HistoryDone = std::function<void(HistoryResult)>;
using PresenceDone = std::function<void(PresenceResult)>;
using RemoveDone = std::function<void(std::error_code)>;

// Posts `completion` into `inbox` to run on its thread in inbox order (for
// brokers that answer through the inbox).
inline void post_completion(Inbox& inbox, std::function<void()> completion) {
  auto* envelope = new Envelope;
  envelope->completion = std::move(completion);
  inbox.post(envelope);
}

class Broker {
 public:
  virtual ~Broker() = default;

  // The limits every hub on this broker enforces.
  virtual const Limits& limits() const noexcept = 0;

  // True if every `done` runs before the call returns (the Bus); false if it
  // runs later, from the inbox (see "Answers are completions").
  virtual bool completes_inline() const noexcept = 0;

  // Publishes `data` on `channel` for a hub whose inbox is `from` (where the
  // answer goes): orders it, appends it to the history and posts it to every
  // interested inbox. Errors (nothing published): see PublishResult.
  virtual void publish(Inbox& from, std::string_view channel, std::string data, std::string info,
                       const PublishOptions& options, PublishDone done) = 0;
  void publish(Inbox& from, std::string_view channel, std::string data, std::string info,
               PublishDone done) {
    publish(from, channel, std::move(data), std::move(info), PublishOptions{}, std::move(done));
  }

  // A subscriber of `inbox` joins `channel` (the hub has checked the name and
  // its limits). Counts presence, posts a join event if the channel has
  // join_leave on, registers interest if first_local, and recovers from
  // `since` (see JoinRequest / SubscribeResult, contract 2). On error
  // nothing changed.
  virtual void join(Inbox& inbox, const JoinRequest& request, JoinDone done) = 0;

  // A subscriber of `inbox` leaves `channel`; with last_local the broker stops
  // posting the channel to `inbox`. Posts a leave event if join_leave is on.
  virtual void leave(Inbox& inbox, std::string_view channel, std::string_view info,
                     bool last_local) = 0;

  // The latest `limit` publications, oldest first, and the stream's top.
  // limit 0 asks for the position only.
  virtual void history(Inbox& from, std::string_view channel, std::size_t limit,
                       HistoryDone done) = 0;

  // Subscribers of `channel` over every hub (0 if none).
  virtual void presence(Inbox& from, std::string_view channel, PresenceDone done) = 0;

  // Forgets `channel`'s history (what history and recovery could return),
  // keeping its stream position: later publications continue its offsets in
  // its epoch, and recovery from before the removal answers recovered
  // false. Errors: a bad channel name; a remote broker's (unavailable).
  virtual void remove_history(Inbox& from, std::string_view channel, RemoveDone done) = 0;

  // Drops expired history and frees channels left with neither subscribers
  // nor history. Hubs on a loop call it every sweep_interval().
  virtual void sweep() = 0;
  virtual Duration sweep_interval() const noexcept = 0;

  // Bookkeeping: a hub attaches when made and detaches when destroyed (after
  // leaving every channel). After detach() returns nothing is posted to the
  // inbox any more.
  virtual void attach(Inbox& inbox) = 0;
  virtual void detach(Inbox& inbox) noexcept = 0;
};

}  // namespace heartwheel::pubsub
