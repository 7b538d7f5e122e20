// heartwheel/pubsub/broker.h - the seam between hubs and whatever orders,
// stores and carries publications: the in-process Bus today (bus.h), a Redis
// link for several nodes later.
//
// What a broker owns
//   - Order: each channel's events get one sequence, one offset per
//     publication (1, 2, 3, ...), in one order that every hub sees.
//   - History: the bounded ring (size, TTL) per channel, epochs, recovery.
//   - Presence: the subscriber count per channel over every hub, join/leave.
//   - Fan-out between hubs: it posts each event, as an Envelope, into the
//     Inbox of every hub that has subscribers of the channel, in that order.
//   A hub owns only its local subscribers and their delivery (hub.h).
//
// The contract a broker keeps (hubs rely on it)
//   1. For one channel, envelopes are posted to an inbox in increasing `seq`
//      order, and every event the broker orders after join(first_local)
//      returned, until leave(last_local), is posted to that inbox.
//   2. join(first_local) returns the seq and offset of the last event ordered
//      before the inbox became interested; join() recovers publications only
//      up to the offset the hub says it has delivered (`upto`), so the
//      recovered ones and the live ones neither overlap nor leave a gap.
//   3. A channel's epoch does not change while any inbox is interested.
//   A broker talking to a remote store would answer join/history/presence
//   from its own mirror or make these calls asynchronous; the in-process Bus
//   answers them under a lock, at once.
//
// Threads: every Broker method may be called from any thread. Inbox::post()
//   is called from any thread; the inbox (a Hub) consumes on its own thread.
#pragma once

#include <heartwheel/detail/mpsc_queue.h>
#include <heartwheel/pubsub/event.h>
#include <heartwheel/pubsub/limits.h>
#include <heartwheel/time.h>

#include <cstddef>
#include <cstdint>
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
  std::uint64_t seq = 0;  // the event's place in its channel's order (see contract 1)
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
  std::error_code error;    // errc::empty_channel .. data_too_large; nothing published
  StreamPosition position;  // the publication's offset and epoch; {0, ""} when the
                            // channel had neither subscribers nor history (no one heard it)
};

struct HistoryResult {
  std::error_code error;                     // a bad channel name
  StreamPosition position;                   // the stream's top now ({0, ""}: no stream)
  std::vector<PublicationPtr> publications;  // oldest first
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

class Broker {
 public:
  virtual ~Broker() = default;

  // The limits every hub on this broker enforces.
  virtual const Limits& limits() const noexcept = 0;

  // Publishes `data` on `channel`: orders it, appends it to the history and
  // posts it to every interested inbox. Errors (nothing happens): see
  // PublishResult.
  virtual PublishResult publish(std::string_view channel, std::string data, std::string info) = 0;

  // A subscriber of `inbox` joins `channel` (the hub has checked the name and
  // its limits). Counts presence, posts a join event if the channel has
  // join_leave on, registers interest if first_local, and recovers from
  // `since` (see JoinRequest / SubscribeResult).
  virtual SubscribeResult join(Inbox& inbox, const JoinRequest& request) = 0;

  // A subscriber of `inbox` leaves `channel`; with last_local the broker stops
  // posting the channel to `inbox`. Posts a leave event if join_leave is on.
  virtual void leave(Inbox& inbox, std::string_view channel, std::string_view info,
                     bool last_local) = 0;

  // The latest `limit` publications, oldest first, and the stream's top.
  // limit 0 asks for the position only.
  virtual HistoryResult history(std::string_view channel, std::size_t limit) = 0;

  // Subscribers of `channel` over every hub (0 if none).
  virtual std::uint64_t presence(std::string_view channel) = 0;

  // Drops expired history and frees channels left with neither subscribers
  // nor history. Hubs on a loop call it every sweep_interval().
  virtual void sweep() = 0;
  virtual Duration sweep_interval() const noexcept = 0;

  // Bookkeeping: a hub attaches when made and detaches when destroyed (after
  // leaving every channel).
  virtual void attach(Inbox& inbox) = 0;
  virtual void detach(Inbox& inbox) noexcept = 0;
};

}  // namespace heartwheel::pubsub
