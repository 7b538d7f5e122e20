// heartwheel/pubsub_redis/redis_broker.h - the pub/sub broker for several nodes:
// publications, history, recovery and presence in Redis, fan-out to the hubs
// of this process.
//
// What it is
//   One RedisBroker per process (node), in place of the Bus: the hubs of the
//   process's worker loops attach to it exactly as to a Bus (hub.h) and
//   receive through their inboxes. It runs its own thread with its own loop
//   and wheel, carrying one redis::Client (scripts, reads) and one
//   redis::Subscriber (the channels this node has subscribers of). A hub's
//   requests are handed to that thread (a mutex-guarded queue and one
//   uv_async_send); answers come back through the hub's inbox, in order with
//   the events (broker.h, "Answers are completions": completes_inline() is
//   false, so hubs must use the callback forms of subscribe/publish/...).
//   Why its own thread: no worker loop is special, a busy worker never delays
//   another's publications, and each publication from Redis is decoded, and
//   encoded into the client frame (encode_publication), ONCE per node, then
//   shared by every hub (Event::frame) and every subscriber.
//
// Redis keys (K = key_prefix, C = channel, T = the hash tag of C's partition)
//   Channels are grouped into `partitions` partitions (Centrifugo's
//   grouping): C's partition is CRC16(C) mod partitions, and each partition
//   has a short hash tag chosen so that the partitions spread evenly over
//   the 16,384 slots (redis::Partitions, heartwheel/redis/slot.h). Every
//   name of C carries "{T}", so every script touches one slot, and on a
//   Redis Cluster a node needs one connection per master, not per channel:
//     K{T}C:m  hash: s = last offset, e = epoch (random, set when the stream
//              is made; expires history_ttl after the last publish, as the
//              stream does: then a new epoch, clients get recovered: false);
//              after a rewind (below) also b = the epoch's base (its offsets
//              start at b + 1; the stream's entries up to b are kept from
//              the epoch before) and p = that previous epoch
//     K{T}C:s  stream: one entry per publication, id "<offset>-0", fields
//              d (data), i (info); XADD MAXLEN ~ history_size
//     K{T}C:p  hash: node id -> this node's subscribers of C
//     K{T}C:l  sorted set: node id -> lease deadline (Redis time, ms)
//     Kch:{T}C the Redis pub/sub channel of C (redis_channel(C)): PUBLISH /
//              SUBSCRIBE on one redis-server, SPUBLISH / SSUBSCRIBE (sharded
//              pub/sub: the message stays on the master of T's slot) on a
//              cluster; the Subscriber batches its SSUBSCRIBEs per slot
//   publish is ONE Lua script (Centrifugo's shape): make the epoch if there
//   is none, HINCRBY the offset, XADD, PEXPIRE, (S)PUBLISH "p<offset>:
//   <epoch>:<info length>:<info><data>"; it answers {offset, epoch}. It is
//   a durable write (redis::CommandOptions::durable): with the Client's
//   wait_replicas set, the publish is answered only once that many replicas
//   have it, else unavailable (counted in not_replicated).
//   Data written by a version before partitions (keys K{C}:m ...) is not
//   read: the layout changed, and no migration is made.
//
// Fan-out and order
//   The node subscribes to C's Redis channel while any hub has subscribers
//   of C, and unsubscribes when the last leaves. A channel is "synced" by
//   one atomic script that reads its top (offset, epoch) and the stream
//   entries after a given offset: after the subscription is confirmed (live
//   messages arriving meanwhile are buffered), for every round of joins,
//   whenever the subscription is confirmed again after a loss
//   (Subscriber::on_subscribed with again) and whenever an offset arrives
//   out of turn (a gap). Entries the hubs have not had yet are posted from the read;
//   live messages at or below the read top are duplicates and dropped, those
//   after it are posted in offset order. So every hub sees 1, 2, 3, ... with
//   no gap and no overlap, also across a Redis reconnect, as long as the
//   stream still holds what was missed (history_size, history_ttl); on a
//   cluster also across a failover or a slot migration (the subscription is
//   confirmed again on the new master, and the round reads the gap);
//   otherwise the hole is counted (RedisBrokerStats::lost).
//
// Recovery (subscribe with since)
//   The join's round reads the stream after since.offset in the same script;
//   the completion (posted into the hub's inbox after everything up to the
//   read top, broker.h contract 2) carries those publications: recovered is
//   true when the epoch matches and the stream still starts at
//   since.offset + 1 (not trimmed), as with the Bus. A client may recover on
//   another node than the one it was on: the stream is in Redis.
//
// Presence across nodes: leases per node and channel, with counts
//   Each node keeps, per channel, ONE entry: its count of subscribers (K{T}C:p)
//   and its lease deadline (K{T}C:l), renewed on the broker's wheel every
//   presence_ttl / 3 (one timer for the node, Redisson's watchdog). A node
//   that dies stops renewing; within presence_ttl its entry is pruned by the
//   next presence read, and its subscribers vanish from every count. Per
//   node, not per client: renewal costs one script per channel of the node
//   per third of the TTL however many clients, and the count is what the
//   protocol reports (the chat's "clients" list stays local to each node).
//   join/leave adjust the count (HINCRBY) at once and, for a channel with
//   join_leave, PUBLISH a join/leave event with the new total that every
//   node's hubs deliver. Renewal rewrites the absolute count, so a join
//   counted by Redis whose answer was lost heals within presence_ttl / 3.
//
// While Redis is down
//   Requests wait in the Client's bounded buffer (ClientOptions::
//   max_buffered, default 1024 commands) for up to command_timeout (5 s);
//   a full buffer, or the timeout, answers errc::unavailable (a join whose
//   SUBSCRIBE Redis has not confirmed within command_timeout too) (the chat sends
//   it as an error reply "unavailable"). A publish that timed out or whose
//   connection dropped after it was sent may or may not have been taken
//   (check history). Nothing is dropped silently: stats() counts it.
//   Publications made by other nodes during an outage of the pub/sub link
//   are read from the stream when it re-subscribes (on_subscribed again), if
//   history holds them; a Redis that lost its data (restart without
//   persistence) starts new streams: events come with a new epoch
//   (Envelope::new_epoch) and subscribers see the change.
//
// A stream that went back (rewind)
//   A failover to a replica that lagged loses the old master's last writes:
//   a node that delivered offsets up to N finds the channel's top M < N in
//   the same epoch. It gives the channel a new epoch (one script, a
//   compare-and-set on the epoch it saw: of nodes racing, one wins and the
//   others read its epoch) that KEEPS the stream: base b = M, new
//   publications continue at b + 1, history still holds every publication
//   that survived. Each node that delivered in the old epoch continues after
//   min(what it delivered, b) (nothing delivered again; offsets it missed
//   below b are filled from the stream); the next event carries new_epoch
//   and recovery from the old epoch answers recovered false, so clients
//   reload history. Publications the new master took before the reset got
//   offsets a node had already delivered: they are in history, but not
//   delivered live by that node (it cannot tell them from the ones it had).
//
// Threads: every Broker method, any thread. stats(), any thread.
// Lifetime: hubs attach and detach as with the Bus; the broker must outlive
//   them (the destructor aborts with a message otherwise). The destructor
//   lets the leaves of the departed hubs reach Redis (up to 1 s), then stops.
#pragma once

#include <heartwheel/common/stat_fields.h>
#include <heartwheel/pubsub/broker.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/stats.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::pubsub {

struct RedisBrokerOptions {
  Limits limits;
  // history_size, history_ttl, join_leave for every channel. history_ttl is
  // also the TTL of the channel's offset and epoch (K{T}C:m), so it must be
  // positive even without history.
  ChannelOptions channel{.history_size = 100, .history_ttl = std::chrono::minutes(5)};
  // Where Redis is and how the links behave (the Subscriber uses the same
  // LinkOptions). connector.host/port, command_timeout, max_buffered, ...
  redis::ClientOptions redis;
  // Prefix of every key and Redis channel (several applications, or tests,
  // on one Redis). No braces.
  std::string key_prefix = "hw:";
  // Channels are grouped into this many partitions, each with a hash tag
  // of its own (see "Redis keys"); every node of a deployment must use the
  // same number. 1..16384.
  std::size_t partitions = 128;
  // This node's name in presence entries; empty: random (16 hex digits).
  std::string node_id;
  // Presence lease: renewed every presence_ttl / 3; a dead node's
  // subscribers vanish within presence_ttl.
  Duration presence_ttl = std::chrono::seconds(30);
  // The broker's loop's wheel tick.
  Duration tick = std::chrono::milliseconds(10);
  // Called once per event per NODE on the broker's thread; the frame is
  // shared by every hub (Event::frame). Empty: the hubs encode.
  std::function<Frame(const Publication&)> encode_publication;
  std::function<Frame(const PresenceEvent&)> encode_presence;

  // Throws std::invalid_argument naming the field.
  void validate() const;
};

struct RedisBrokerStats {
  std::uint64_t hubs = 0;
  std::uint64_t channels = 0;        // channels this node is subscribed to in Redis
  std::uint64_t publishes = 0;       // publish requests
  std::uint64_t publish_errors = 0;  // answered with an error (unavailable, ...)
  std::uint64_t joins = 0;
  std::uint64_t join_errors = 0;
  std::uint64_t messages = 0;            // publications and presence events from Redis
  std::uint64_t posted = 0;              // events posted to hubs (one per event per hub)
  std::uint64_t duplicates = 0;          // live publications already posted from a read
  std::uint64_t syncs = 0;               // read rounds (joins, gaps, reconnects)
  std::uint64_t filled_from_stream = 0;  // publications posted from a read (gaps filled)
  std::uint64_t lost = 0;                // publications missed and no longer in the stream
  std::uint64_t epoch_changes = 0;       // streams Redis lost while we listened
  std::uint64_t lease_renewals = 0;      // renewal scripts sent
  std::uint64_t decode_errors = 0;       // messages on our channels we could not read
  std::uint64_t not_replicated = 0;      // publishes that ran but WAIT found too few replicas
  std::uint64_t duplicates_refused = 0;  // publishes whose idempotency key had published already
  std::uint64_t rewinds = 0;  // streams found behind what was delivered (a failover lost
                              // writes): given a new epoch that keeps the stream
  redis::LinkStats link;                 // the Client and the Subscriber, merged
  // Cluster mode: per master, the Client's connection and commands, and the
  // Subscriber's connection and channels. Empty on one redis-server.
  std::vector<redis::MasterStats> masters;
  std::vector<redis::MasterStats> subscriber_masters;

  // The std::uint64_t fields' table (heartwheel/common/stat_fields.h): JSON
  // keys and kind (no Prometheus family yet: programs write the link's,
  // redis::write_metrics); lib/src/pubsub_redis/redis_broker.cpp. The link
  // and the masters are written by hand beside it.
  static StatTable<RedisBrokerStats> fields() noexcept;
};

// One JSON object (the link under "link", the masters under "masters" and
// "subscriber_masters").
std::string to_json(const RedisBrokerStats& stats);

class RedisBroker final : public Broker {
 public:
  // Validates options (std::invalid_argument), starts the broker's thread
  // and connects (reconnecting in the background: Redis need not be up).
  explicit RedisBroker(RedisBrokerOptions options);
  ~RedisBroker() override;
  RedisBroker(const RedisBroker&) = delete;
  RedisBroker& operator=(const RedisBroker&) = delete;

  const Limits& limits() const noexcept override { return options_.limits; }
  bool completes_inline() const noexcept override { return false; }
  using Broker::publish;
  // An idempotency key is K{T}i:<channel length>:<channel>:<key> (the
  // channel's slot), set in the publish script with the window as its TTL
  // and read there first: of two publishes with one key, on any nodes, one
  // publishes and the other gets its offset.
  void publish(Inbox& from, std::string_view channel, std::string data, std::string info,
               const PublishOptions& options, PublishDone done) override;
  void join(Inbox& inbox, const JoinRequest& request, JoinDone done) override;
  void leave(Inbox& inbox, std::string_view channel, std::string_view info,
             bool last_local) override;
  void history(Inbox& from, std::string_view channel, std::size_t limit, HistoryDone done) override;
  void presence(Inbox& from, std::string_view channel, PresenceDone done) override;
  // XTRIM of the channel's stream to nothing; its meta (offset, epoch) stays.
  void remove_history(Inbox& from, std::string_view channel, RemoveDone done) override;
  // Nothing to sweep here: Redis expires history itself.
  void sweep() override {}
  Duration sweep_interval() const noexcept override { return std::chrono::hours(1); }
  void attach(Inbox& inbox) override;
  void detach(Inbox& inbox) noexcept override;

  // Stops talking to Redis at once, as if the node had crashed: no leaves,
  // no lease renewals, no commands (requests then answer unavailable). For
  // tests of lease expiry and for fencing a node. Any thread.
  void halt();

  const std::string& node_id() const noexcept { return options_.node_id; }
  // The Redis pub/sub channel carrying `channel`'s events ("Redis keys"):
  // for PUBSUB NUMSUB / SHARDNUMSUB and the like. Any thread.
  std::string redis_channel(std::string_view channel) const;
  // A snapshot, taken on the broker's thread (waits for it, up to 1 s).
  RedisBrokerStats stats() const;

 private:
  class Core;
  RedisBrokerOptions options_;
  std::unique_ptr<Core> core_;
};

}  // namespace heartwheel::pubsub
