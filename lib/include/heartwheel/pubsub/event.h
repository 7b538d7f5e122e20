// heartwheel/pubsub/event.h - what travels through the pub/sub layer: a
// publication (or a presence event) on a channel, immutable and shared.
//
// What it is
//   A Publication is made once by the broker when it is published (with its
//   offset and the channel's epoch) and then only read: the history ring, the
//   inbox of every hub and every subscriber's callback see the same object
//   through a std::shared_ptr<const ...>. Nothing is copied per hub or per
//   subscriber. A PresenceEvent (join / leave) travels the same way.
//
// Positions
//   Every publication of a channel gets the next offset (1, 2, 3, ... with no
//   gaps) and carries the channel's epoch: a random 8-hex-character string
//   made when the channel's stream (history, offsets) is created, and made
//   anew when the stream is lost (the channel was freed, or the process
//   restarted: an in-memory history dies with it). {offset, epoch} is a
//   StreamPosition: a client remembers the last one it saw and offers it when
//   it resubscribes (see Hub::subscribe).
//
// Frames
//   A Frame is the encoded form of an event (e.g. a WebSocket frame of a JSON
//   push message), made once per event per hub by the hub's encoder and
//   handed to every local subscriber; a subscriber that cannot write it at
//   once keeps the shared_ptr (a reference count) instead of copying bytes.
//   Null when the hub has no encoder. A broker serving several hubs may
//   encode once per node instead (Event::frame).
//
// Threads: immutable once shared, so any thread may read them; the reference
//   counts are atomic.
#pragma once

#include <heartwheel/common/time.h>

#include <cstdint>
#include <memory>
#include <string>

namespace heartwheel::pubsub {

// A place in a channel's stream: the offset of the last publication seen and
// the epoch it belongs to. {0, ""} means "nothing": no stream exists.
struct StreamPosition {
  std::uint64_t offset = 0;
  std::string epoch;

  friend bool operator==(const StreamPosition&, const StreamPosition&) = default;
};

enum class EventKind : std::uint8_t { publication, join, leave };

// The common part of what a hub delivers. Use the kind to cast to
// Publication (publication) or PresenceEvent (join, leave).
struct Event {
  EventKind kind = EventKind::publication;
  std::string channel;
  std::string epoch;  // the channel's epoch when the event happened
  // Set by a broker that encodes once per node for all its hubs
  // (RedisBrokerOptions::encode_publication): hubs hand it to subscribers
  // instead of calling their own encoder. Null otherwise.
  std::shared_ptr<const std::string> frame;
};

struct Publication : Event {
  std::uint64_t offset = 0;  // 1-based, consecutive within an epoch
  std::string data;          // the payload, opaque to the layer
  std::string info;          // the publisher's client info, opaque (may be empty)
  TimePoint time{};          // when the broker took it (its clock), for the history TTL
};

struct PresenceEvent : Event {
  std::string info;               // the joining / leaving subscriber's presence info
  std::uint64_t subscribers = 0;  // subscribers of the channel, on every hub, after the change
};

using EventPtr = std::shared_ptr<const Event>;
using PublicationPtr = std::shared_ptr<const Publication>;
using PresencePtr = std::shared_ptr<const PresenceEvent>;
using Frame = std::shared_ptr<const std::string>;

}  // namespace heartwheel::pubsub
