// heartwheel/pubsub/hub.h - the pub/sub endpoint of one event loop: its local
// subscribers, their channels, and the delivery of each event to them.
//
// What it is
//   One Hub per loop thread (per uv_loop_t). Connections of that loop
//   subscribe through it; publications from any thread reach it through its
//   broker (the process's Bus): the broker posts one envelope per event into
//   the hub's MPSC inbox and wakes the loop with one uv_async_send per batch.
//   On wake-up the hub takes the envelopes in order and, for each event of a
//   channel with local subscribers: calls the encoder ONCE (one Frame shared
//   by every local subscriber), then walks the channel's intrusive list of
//   subscriptions calling each subscriber, and counts each outcome.
//
// Ordering: a channel's publications reach each subscriber in offset order,
//   consecutive from the position its subscribe returned (gaps only where the
//   subscriber skipped an event itself, counted as skips).
//
// Answers: subscribe, publish, history and presence take a callback that
//   the broker's answer reaches on this thread (broker.h, "Answers are
//   completions"); the forms returning a value work with the Bus only.
//
// Delivery is never synchronous: publish() only hands the publication to the
//   broker; the hub's own subscribers get it on a later loop iteration (the
//   inbox's uv_async), or at the next poll() on a hub without a loop. So a
//   subscribe reply can be sent before any live event of that channel, and a
//   publish from inside a callback cannot recurse into the fan-out.
//
// Cost
//   Fan-out: per local subscriber one list step and one virtual call; no
//   allocation, no copy, no lock. Per event per hub: one hash lookup, one
//   encode, one envelope freed. subscribe/unsubscribe: one hash lookup, a
//   walk of the subscriber's own channels (<= channel_limit), one broker call
//   (a shard lock), one 40-byte allocation / free.
//
// Ownership and lifetime
//   The hub does not own subscribers; a subscriber's destructor unsubscribes
//   it. The hub's destructor unsubscribes every remaining subscriber (their
//   leave events are posted; their callbacks are not called), detaches from
//   the broker, frees undelivered envelopes and closes its libuv handles:
//   destroy it before the loop's final uv_run, which completes those closes.
//   The broker must outlive the hub.
//
// Threads: every method on the hub's loop thread (the thread that made it,
//   for a hub without a loop). Only the broker talks to it from other threads.
// Re-entrancy: inside Subscriber callbacks every method may be called (see
//   subscriber.h): a subscriber unsubscribed during a fan-out is not called
//   again for that event; one subscribed during it is not called for it (its
//   subscribe result covers it through recovery, if there is history). The
//   hub must not be destroyed from a callback; poll() from a callback does
//   nothing.
#pragma once

#include <heartwheel/common/detail/mpsc_queue.h>
#include <heartwheel/pubsub/broker.h>
#include <heartwheel/pubsub/event.h>
#include <heartwheel/pubsub/keyed_hash.h>
#include <heartwheel/pubsub/stats.h>
#include <heartwheel/pubsub/subscriber.h>
#include <uv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace heartwheel::pubsub {

struct HubOptions {
  // The loop the hub lives on: its inbox wakes this loop, its sweep timer runs
  // here. Null: no loop, the owner calls poll() (tests, simulations).
  uv_loop_t* loop = nullptr;
  // Called once per publication per hub when the channel has local
  // subscribers: e.g. the WebSocket frame of the JSON push message. Empty:
  // subscribers get a null Frame. An exception counts as encode_errors and
  // the publication reaches no local subscriber (counted as dropped).
  std::function<Frame(const Publication&)> encode_publication;
  // The same for join/leave events.
  std::function<Frame(const PresenceEvent&)> encode_presence;
  // Envelopes handled per wake-up before yielding to I/O; the rest follow on
  // the next loop iteration (a flood of publications cannot stall reads).
  std::size_t max_events_per_wakeup = 4096;
  // Further encodings of the same events, for subscribers that speak another
  // protocol (heartwheel-chat: Centrifugo's beside its own). Each is made
  // only when a subscriber asks for it during a fan-out (frame_as), at most
  // once per event per hub, and shared by every subscriber asking for it.
  // A subscriber of encode_publication's kind pays nothing for them.
  struct Encoding {
    std::function<Frame(const Publication&)> publication;
    std::function<Frame(const PresenceEvent&)> presence;
  };
  std::vector<Encoding> more_encodings;

  // Throws std::invalid_argument naming the field.
  void validate() const;
};

struct SubscribeOptions {
  // Recover what was missed since this position (a client's last seen
  // {offset, epoch}): SubscribeResult::recovered and ::publications.
  std::optional<StreamPosition> since;
};

class Hub final : private Inbox {
 public:
  // Attaches to `broker`; with a loop, opens its uv_async and sweep timer
  // (both unref'd: a hub alone does not keep the loop alive). Throws
  // std::invalid_argument on bad options, std::system_error if libuv fails.
  explicit Hub(Broker& broker, HubOptions options = {});
  ~Hub();

  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  // Subscribes `subscriber` to `channel`; `done` gets the answer. On success
  // its callbacks get every event of the channel ordered after
  // result.position; with options.since, result.publications holds the
  // missed ones (oldest first, deliver them before anything live) and
  // result.recovered says if that is all of them (false: epoch changed, or
  // the history no longer reaches back: the client must reload).
  // result.subscribers is the presence count after joining.
  // `done` runs exactly once on this thread: inside the call for the errors
  // found here and with a broker that completes inline (the Bus), else later
  // from the inbox, before any live event of the channel reaches the
  // subscriber. Until then the subscription is pending: it counts towards
  // channel_limit and already_subscribed, and unsubscribe() (or the
  // subscriber's destruction) cancels it: `done` still reports the broker's
  // answer, and the join is undone (a leave) when it comes.
  // Errors (nothing changes): empty_channel, channel_too_long,
  // bad_channel_character, channel_limit, already_subscribed, wrong_hub; a
  // remote broker's (unavailable).
  void subscribe(Subscriber& subscriber, std::string_view channel, const SubscribeOptions& options,
                 JoinDone done);
  // The same, answered as a return value: only with a broker that completes
  // inline (Broker::completes_inline(), the Bus); throws std::logic_error
  // otherwise.
  SubscribeResult subscribe(Subscriber& subscriber, std::string_view channel,
                            const SubscribeOptions& options = {});

  // Unsubscribes from one channel; its callbacks get nothing more from it.
  // Errors: not_subscribed (also for an invalid name).
  std::error_code unsubscribe(Subscriber& subscriber, std::string_view channel);

  // Unsubscribes from every channel; returns how many. Call it when the
  // subscriber's connection closes.
  std::size_t unsubscribe_all(Subscriber& subscriber);

  // Publishes through the broker (any worker's subscribers get it, this
  // hub's on a later iteration). Errors: see PublishResult. `done` (may be
  // empty) runs as for subscribe; publishes of one hub complete in order.
  void publish(std::string_view channel, std::string data, std::string info, PublishDone done);
  // The same with PublishOptions (an idempotency key, broker.h).
  void publish(std::string_view channel, std::string data, std::string info,
               const PublishOptions& options, PublishDone done);
  // Inline brokers only (else std::logic_error), like subscribe.
  PublishResult publish(std::string_view channel, std::string data, std::string info = {});

  // The broker's history and presence (see Broker); `done` as for publish.
  void history(std::string_view channel, std::size_t limit, HistoryDone done);
  void presence(std::string_view channel, PresenceDone done);
  // The broker's remove_history (broker.h); `done` as for publish.
  void remove_history(std::string_view channel, RemoveDone done);
  // Inline brokers only (else std::logic_error).
  HistoryResult history(std::string_view channel, std::size_t limit);
  std::uint64_t presence(std::string_view channel);

  // Inside a Subscriber's on_publication / on_presence during a fan-out:
  // the event being delivered, encoded with more_encodings[index] (made at
  // the first ask of the event, then shared). Null outside a fan-out, for
  // an index out of range or an empty encoder, and when the encoder threw
  // (counted in encode_errors; the subscriber then reports dropped).
  Frame frame_as(std::size_t index) noexcept;

  // Handles up to max_events_per_wakeup envelopes from the inbox now, and
  // returns how many. Hubs without a loop must call it; on a loop it is
  // optional. Does nothing (returns 0) when called from a callback.
  std::size_t poll();

  // Local questions.
  bool subscribed(const Subscriber& subscriber, std::string_view channel) const;
  std::size_t local_subscribers(std::string_view channel) const;
  // Every channel with local subscribers and how many (pending joins
  // included), in no particular order. O(channels): for administration
  // (heartwheel-chat's server API `channels`), not for a hot path.
  struct LocalCount {
    std::string channel;
    std::size_t subscribers = 0;
  };
  std::vector<LocalCount> local_channels() const;
  HubStats stats() const;
  // One channel's delivery counters on this hub, while it has local subscribers.
  std::optional<ChannelStats> channel_stats(std::string_view channel) const;

  Broker& broker() const noexcept { return broker_; }
  uv_loop_t* loop() const noexcept { return options_.loop; }

 private:
  struct LoopHandles;
  friend struct LoopHandles;

  void open_loop();
  void close_loop() noexcept;
  void post(Envelope* envelope) noexcept override;
  void wake() noexcept;
  void on_wakeup() noexcept;
  std::size_t drain(std::size_t budget) noexcept;
  void dispatch(Envelope& envelope) noexcept;
  void fan_out_publication(detail::LocalChannel& channel, const Publication& publication) noexcept;
  void fan_out_presence(detail::LocalChannel& channel, const PresenceEvent& event) noexcept;
  template <class Call>
  void fan_out(detail::LocalChannel& channel, bool presence, Call&& call) noexcept;
  template <class Encoder, class E>
  bool encode(const Encoder& encoder, detail::LocalChannel& channel, const E& event,
              Frame& frame) noexcept;

  detail::LocalChannel* find(std::string_view channel) const noexcept;
  detail::Subscription* find_subscription(const Subscriber& subscriber,
                                          const detail::LocalChannel* channel) const noexcept;
  // Unlinks `sub` and tells the broker; frees the channel when it empties
  // (unless a fan-out of it is running). Frees `sub`.
  void remove(detail::Subscription* sub) noexcept;
  // The broker answered a join (see subscribe).
  void on_joined(detail::Subscription* sub, bool first_local, const std::string& info,
                 SubscribeResult result, const JoinDone& done) noexcept;
  void require_inline(const char* what) const;
  static void unlink_from_subscriber(detail::Subscription* sub) noexcept;
  void release_if_empty(detail::LocalChannel* channel) noexcept;

  Broker& broker_;
  HubOptions options_;
  Limits limits_;
  heartwheel::detail::MpscQueue<Envelope> inbox_;
  std::atomic<bool> wake_pending_{false};
  LoopHandles* handles_ = nullptr;
  // Keys are views of LocalChannel::name; values are owned (deleted on release).
  std::unordered_map<std::string_view, detail::LocalChannel*, KeyedStringHash> channels_;
  // The fan-out in progress: its channel and the next subscription to call
  // (moved on when that one is unlinked), so callbacks may unsubscribe anyone.
  detail::LocalChannel* fanning_ = nullptr;
  detail::Subscription* cursor_ = nullptr;
  // The event of the running fan-out and its further encodings made so far
  // (frame_as); cleared when the fan-out ends.
  const Event* fanning_event_ = nullptr;
  std::vector<Frame> more_frames_;
  // Subscriptions whose join the broker has not answered yet (freed here if
  // the hub goes first). Marked by prev == next == itself.
  std::unordered_set<detail::Subscription*> pending_;
  bool draining_ = false;
  HubStats stats_;
};

}  // namespace heartwheel::pubsub
