// heartwheel/pubsub/subscriber.h - what receives publications: the interface a
// connection (or anything else) embeds to be subscribed through a Hub.
//
// What it is
//   A Subscriber is a base class. Its callbacks receive each event of the
//   channels it is subscribed to, with the hub's encoded Frame, and report
//   what became of it (DeliveryOutcome): the hub counts every outcome per
//   channel and in total, so a slow consumer is never dropped silently. The
//   subscriber, not the hub, decides: it knows its write queue and its policy
//   (close with reason slow_consumer, or skip).
//
// Cost
//   sizeof(Subscriber) is 24 bytes (vtable, list head, the presence info's
//   pointer: no count, channel_count() walks the list; no hub pointer,
//   hub() reads the first subscription's channel); each subscription is one
//   detail::Subscription node (40 bytes, one allocation: 48 bytes of heap)
//   that the hub links into the channel's list and the subscriber's list.
//
// Ownership and lifetime
//   The application owns the Subscriber. A subscriber is bound to the hub of
//   its first subscription (its connection's loop) until it has none left.
//   Call Hub::unsubscribe_all() when the connection closes; the destructor does
//   it too (sending leave events), so a destroyed subscriber is never left
//   linked. The destructor is protected (and virtual, as the class has
//   virtual functions): destroy through the derived type.
//
// Threads: the hub's loop thread only, like the hub.
// Re-entrancy: inside on_publication / on_presence the subscriber may
//   unsubscribe itself or others, subscribe, publish, close its connection,
//   or even be destroyed (after its own callback has started, the hub does not
//   touch it again for this event). It must not destroy the hub.
#pragma once

#include <heartwheel/pubsub/event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace heartwheel::pubsub {

class Hub;
class Subscriber;

namespace detail {
struct LocalChannel;

// One subscriber on one channel: a node in the channel's doubly linked list
// (walked on fan-out) and in the subscriber's singly linked list (walked on
// unsubscribe and channel-limit checks, at most Limits::channel_limit long).
struct Subscription {
  Subscription* prev = nullptr;
  Subscription* next = nullptr;
  Subscription* next_of_subscriber = nullptr;
  LocalChannel* channel = nullptr;
  Subscriber* subscriber = nullptr;
};
}  // namespace detail

// What a subscriber did with an event. Every value is counted.
enum class DeliveryOutcome : std::uint8_t {
  delivered,  // written, or queued for writing
  skipped,    // slow consumer, policy "skip": this event is not sent (HubStats::skips)
  closed,     // slow consumer, policy "close": the subscriber closed (HubStats::slow_closes)
  dropped,    // not sent for another reason, e.g. the connection is already closing
};

class Subscriber {
 public:
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // A publication of a subscribed channel, in offset order, with the hub's
  // frame for it (null without an encoder). Keep `frame` (copy the
  // shared_ptr) to write later; never copy its bytes. Exceptions are caught
  // and counted (HubStats::subscriber_errors), as `dropped`.
  virtual DeliveryOutcome on_publication(const Publication& publication, const Frame& frame) = 0;

  // A join or leave on a subscribed channel (when the channel has join_leave
  // on), including the subscriber's own join. Default: ignored (counted as
  // delivered).
  virtual DeliveryOutcome on_presence(const PresenceEvent& event, const Frame& frame);

  // A hint, not a delivery: the hub calls it for the next subscriber of a
  // fan-out while the current one's delivery is done, so an override can
  // start loading (prefetch, never block) what its on_publication will read,
  // e.g. its connection's object. Must not throw nor change state. Default:
  // nothing.
  virtual void prefetch() const noexcept {}

  // Opaque client info (e.g. JSON with a user id) carried by this
  // subscriber's join and leave events. Set it before subscribing. Kept in
  // one heap block of its own (none while empty); presence_info() is valid
  // until the next set_presence_info() or the subscriber's end. Throws
  // std::bad_alloc; std::length_error above 4 GiB.
  void set_presence_info(std::string_view info);
  std::string_view presence_info() const noexcept {
    if (!presence_info_) return {};
    std::uint32_t size;
    std::memcpy(&size, presence_info_.get(), sizeof size);
    return {presence_info_.get() + sizeof size, size};
  }

  // Channels this subscriber is on (pending joins included), and the hub
  // they are on (null if none). channel_count() walks the subscriber's list
  // (at most Limits::channel_limit nodes): a count field cost 8 bytes on
  // every subscriber (docs/memory.md). hub() reads the first subscription's
  // channel (two loads): a hub pointer cost 8 bytes on every subscriber.
  std::size_t channel_count() const noexcept;
  Hub* hub() const noexcept;

 protected:
  Subscriber() = default;
  // Unsubscribes from every channel (Hub::unsubscribe_all).
  virtual ~Subscriber();

 private:
  friend class Hub;
  detail::Subscription* subscriptions_ = nullptr;
  // [32-bit size][bytes], or null: 8 bytes on every subscriber instead of a
  // std::string's 32, and one block instead of two for a JSON info too long
  // for the string's inline buffer (docs/memory.md).
  std::unique_ptr<char[]> presence_info_;
};

}  // namespace heartwheel::pubsub
