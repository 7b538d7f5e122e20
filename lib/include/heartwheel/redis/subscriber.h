// heartwheel/redis/subscriber.h - a Redis pub/sub link that survives Redis
// restarts.
//
// What it is
//   One connection in Redis's subscribed mode (RESP2), kept by a
//   net::Connector like every link (link_options.h: reconnect with backoff
//   and jitter, PING heartbeat closing a silent Redis with pong_timeout).
//   The application says what it wants; the Subscriber makes Redis agree,
//   on this connection and on every later one:
//     redis::SubscriberOptions o;
//     o.on_message = [](const redis::Message& m) { hub.publish(m.channel, m.payload); };
//     o.on_resubscribed = [](std::size_t n) { /* fill the gap from the stream history */ };
//     redis::Subscriber sub(wheel, o);
//     sub.subscribe("chat:lobby");               // before or after start(), connected or not
//     sub.psubscribe("user:*");
//     sub.start();
//
// The wanted set, and reconnects
//   subscribe()/psubscribe() add a channel/pattern to the wanted set and,
//   when connected, send SUBSCRIBE/PSUBSCRIBE; unsubscribe()/punsubscribe()
//   remove it and send UNSUBSCRIBE/PUNSUBSCRIBE. All four are idempotent and
//   never fail for lack of a connection. When a connection opens, the whole
//   wanted set is subscribed (one SUBSCRIBE and one PSUBSCRIBE per 1,000
//   names). This is the answer to a known failure of other stacks, where
//   updates silently stop after Redis restarts because nobody subscribed
//   again: here a reconnect re-subscribes everything, and reports it:
//     on_subscribed(name, pattern, again)  Redis confirmed one subscription
//                                          (again: on a reconnect)
//     on_resubscribed(count)               after a reconnect, Redis has
//                                          confirmed every wanted one
//     LinkStats: subscriptions, active_subscriptions, resubscribes,
//                resubscribe_rounds, reconnects
//   Redis pub/sub keeps nothing for absent subscribers: messages published
//   while the link was down are lost (on_disconnect says when that window
//   opened, on_resubscribed when it closed). A broker that must not lose
//   them keeps history elsewhere (Redis Streams: stream.h) and reads the gap.
//
// Redis Cluster: sharded pub/sub (LinkOptions::cluster.seeds set)
//   subscribe(channel) SSUBSCRIBEs the channel on the master that owns its
//   slot (heartwheel/redis/slot.h): one connection per master that owns a
//   wanted channel, plus one reading the slot map. Publishers use SPUBLISH
//   (a Client command routed by the channel's slot). Every SSUBSCRIBE
//   carries channels of one slot only (Redis refuses others), so names that
//   share a hash tag (a partition) go out together. The subscriber follows
//   the cluster:
//     - a failover: the connection to the old master drops; the slot map is
//       read every refresh_interval until the replica has taken over, then
//       the channels are subscribed on the new master; the map is read once
//       more when a lost master's connection is back (a killed master that
//       restarted may be a replica now), so a subscriber that held channels
//       on the dead master always counts the failover (LinkStats::failovers);
//     - a slot migration: Redis sends "sunsubscribe" for the slot's
//       channels; they are asked again, Redis answers -MOVED with the new
//       master, and they move there (the map is read again too);
//     - a failover its own connections do not see: a master frozen or cut
//       off by a partition keeps its connection open until the heartbeat
//       gives up (3 intervals: 15 s by default), and its channels would
//       hear nothing from the replica that took over meanwhile. A
//       subscriber that follow()s a Client shares that client's slot map:
//       when the client's commands time out on that master it reads the
//       map every refresh_interval, and the map that names the new master
//       moves the subscriber's channels there at the same moment (the
//       connection to the old master is closed once it holds none), counted
//       in this subscriber's failovers too. A subscriber that follows no
//       client, or whose client sends nothing to that master, moves when its
//       own connection drops;
//   and (re)subscribes at most subscribe_batch channels per
//   subscribe_interval on each master's connection, so that 10,000 channels
//   coming back to a new master do not arrive in one burst. In cluster mode
//   on_subscribed(name, false, again) is per channel (again: it had been
//   confirmed before, on this or another master), and on_resubscribed(count)
//   runs when, after any loss (a master's connection, a moved slot), every
//   wanted channel is confirmed again. psubscribe() is not available
//   (sharded pub/sub has no patterns): it throws std::logic_error.
//   masters() lists each master with its connection and channels.
//
// Messages
//   on_message gets channel, payload, and for pattern subscriptions the
//   pattern. The views are valid during the call only. A message for a
//   channel (or pattern) no longer wanted, still in flight when it was
//   unsubscribed, is dropped and counted (stray_messages). A channel that
//   is wanted and also matches a wanted pattern is delivered twice, as Redis
//   sends it (once per subscription).
//
// Ownership and lifetime: the application owns it; destroy it on the loop
//   thread before the LoopWheel (the connection is closed without callbacks).
// Threads: the loop thread only.
// Re-entrancy: callbacks may call subscribe/unsubscribe/psubscribe/
//   punsubscribe, start and stop; not destroy the Subscriber. An exception
//   thrown by a callback is swallowed and counted (callback_exceptions).
// Cost: per wanted name one hash-map node (the name plus ~40 bytes); per
//   message O(1) lookups and the callback; per loop iteration one write.
#pragma once

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/redis/link_options.h>
#include <heartwheel/redis/stats.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace heartwheel::redis {

struct Message {
  std::string_view channel;
  std::string_view payload;
  std::string_view pattern;  // the matching pattern (psubscribe); empty for subscribe
};

struct SubscriberOptions : LinkOptions {
  // Every message of a wanted channel or pattern. Required.
  std::function<void(const Message&)> on_message;
  // Redis confirmed a subscription (again: it was re-made after a reconnect).
  std::function<void(std::string_view name, bool pattern, bool again)> on_subscribed;
  // After a reconnect: every wanted subscription is confirmed again (`count`
  // channels and patterns; 0 when none was wanted).
  std::function<void(std::size_t count)> on_resubscribed;
  // Cluster mode: channels (re)subscribed on one master's connection at most
  // this many per subscribe_interval (both > 0).
  std::size_t subscribe_batch = 500;
  Duration subscribe_interval = std::chrono::milliseconds(20);

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

namespace detail {
class SubscriberImpl;
}
class Client;

class Subscriber {
 public:
  // Validates `options` (std::invalid_argument). Does not connect yet.
  Subscriber(LoopWheel& wheel, SubscriberOptions options);
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Starts connecting (and reconnecting). No-op if started.
  void start();
  // Closes the connection and stops reconnecting; the wanted set is kept,
  // so start() subscribes it again.
  void stop();
  bool started() const noexcept;

  void subscribe(std::string_view channel);
  void unsubscribe(std::string_view channel);
  // Throws std::logic_error in cluster mode (no patterns in sharded pub/sub).
  void psubscribe(std::string_view pattern);
  void punsubscribe(std::string_view pattern);

  // In the wanted set.
  bool wants(std::string_view channel) const noexcept;
  bool wants_pattern(std::string_view pattern) const noexcept;
  // Confirmed by Redis on the current connection.
  bool active(std::string_view channel) const noexcept;
  bool active_pattern(std::string_view pattern) const noexcept;
  // Wanted channels + patterns.
  std::size_t subscriptions() const noexcept;

  bool connected() const noexcept;
  // Writes the pending batch now (normally the loop does, before it polls).
  void flush();
  // The counters, with the gauges filled in.
  LinkStats stats() const noexcept;
  // Cluster mode: every master of the slot map, its connection, and the
  // channels wanted there (MasterStats::pending); by address. Empty for a
  // single redis-server.
  std::vector<MasterStats> masters() const;
  const SubscriberOptions& options() const noexcept;

  // Cluster mode: read no slot map of its own; apply every map `client`
  // reads (one reader, one connection for both), and ask for reads through
  // it. A failover the client meets (commands timing out on a master,
  // redirected, or its connection lost) then moves this subscriber's
  // channels too, even while its own connection to the old master is
  // still open (see "Redis Cluster"). The map's connection is the
  // client's: its on_connect / on_disconnect report it, and its figures
  // (slot_map_refreshes, ...) stay in the client's stats().
  // Preconditions: both links on this loop, for the same cluster; not
  // started yet; destroy this subscriber before `client` (or keep the
  // client's callbacks valid until both are gone). With a single
  // redis-server on both sides: nothing to share, a no-op.
  // Throws std::invalid_argument when one is a cluster link and the other
  // not, std::logic_error when started.
  void follow(Client& client);

 private:
  std::unique_ptr<detail::SubscriberImpl> core_;
};

}  // namespace heartwheel::redis
