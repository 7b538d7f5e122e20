// heartwheel/redis/client.h - a Redis command link on the event loop.
//
// What it is
//   One connection to Redis (a net::Connector: connect timeout, reconnect
//   with backoff and jitter, PING heartbeat; see link_options.h) carrying
//   commands and their replies:
//     redis::ClientOptions o;
//     o.connector.port = 6379;
//     redis::Client redis(wheel, o);
//     redis.start();
//     auto ec = redis.command({"PUBLISH", channel, data},
//                             [](std::error_code ec, redis::Reply r) { ... });
//     if (ec) answer_503(ec.message());             // refused at once: nothing sent
//   Every command is pipelined: the commands issued in one loop iteration
//   leave in one write, before the loop polls again; replies come back in
//   the same order and each goes to its command's callback. Lua scripts go
//   through Script::call (command.h): EVALSHA, behind a SCRIPT LOAD of the
//   script on each new connection, and EVAL once when Redis answers
//   NOSCRIPT all the same.
//
// Outcomes: command() either refuses at once (returns the error, the
//   callback never runs, nothing was sent) or accepts, and then the callback
//   runs exactly once, never from inside command():
//     returned by command():
//       redis::errc::stopped        not started, or stop() was called
//       redis::errc::not_allowed    SUBSCRIBE, MONITOR, ... (use Subscriber)
//       redis::errc::not_connected  no connection and max_buffered == 0
//       redis::errc::buffer_full    no connection and the buffer is full
//       heartwheel::errc::limit_reached  connected, but the connection's
//                                   write queue is at its cap
//                                   (WritePolicy::max_queued_bytes):
//                                   Redis is not reading
//     given to the callback:
//       {} with the reply           Redis answered
//       redis::errc::server_error   Redis answered with an error reply
//                                   (reply.str(): "WRONGTYPE ...")
//       redis::errc::not_replicated a durable write ran, but WAIT saw too
//                                   few replicas (CommandOptions::durable)
//       redis::errc::too_many_redirects  cluster mode: MOVED / ASK more
//                                   than ClusterOptions::max_redirects times
//       heartwheel::errc::timed_out the command's deadline passed first
//                                   (while buffered or in flight); a reply
//                                   that comes later is discarded (counted
//                                   in late_replies)
//       redis::errc::disconnected   in flight when the connection dropped:
//                                   it may or may not have run. Never resent,
//                                   unless CommandOptions::retry (for
//                                   idempotent commands) asked for it
//       redis::errc::stopped        pending when stop() was called
//   Nothing is dropped silently: each outcome has its counter (stats.h).
//
// While Redis is down (the buffering policy)
//   Commands issued while there is no connection (before the first one,
//   while reconnecting) wait in a bounded buffer, up to max_buffered
//   commands and max_buffered_bytes bytes, and are sent in order, after the
//   setup commands, as soon as a connection opens. Their deadline runs from
//   command(), so a buffered command fails with timed_out if Redis does not
//   come back in time. When the buffer is full, command() refuses with
//   buffer_full; with max_buffered = 0 it refuses with not_connected at once
//   (fail fast: the caller answers 503). Commands in flight when the
//   connection drops fail with disconnected, or, with retry, go back to the
//   front of the buffer (in their order, even past its limits) and are sent
//   again. stats() shows connected, buffered and every refusal.
//
// Deadlines (per command, on the connection's request slot)
//   Redis answers the commands of one connection in the order they were
//   sent. So with one timeout for every command (command_timeout) the oldest
//   command still waiting has the earliest deadline, and that deadline alone
//   sits in the connection's request_timeout slot (begin_request), moved on
//   to the next command's on each reply: a store, no wheel operation and no
//   wheel entry per command. Commands with their own, shorter timeouts
//   (CommandOptions::timeout) can have earlier deadlines than older
//   commands; the slot then holds the minimum over the commands in flight,
//   kept in a queue of suffix minima (the sliding-window-minimum technique:
//   push and pop O(1) amortized; with one timeout for all it holds every
//   command, in order, and its front is the oldest command, as above). When
//   the slot passes, every command due fails with timed_out, in the order
//   the commands were sent (an O(n) pass over the commands in flight, only
//   when something timed out; so do the buffered ones); the
//   connection stays open and their late replies are read and discarded.
//   A Redis that is stuck (not slow) is closed by the heartbeat: the PING
//   waits behind the stuck command and no byte comes back.
//   Buffered commands' deadlines use one wheel entry of the client.
//   Blocking commands (BLPOP, XREAD BLOCK) hold up every command behind
//   them on this connection: give them a client of their own.
//
// Redis Cluster (ClientOptions::cluster.seeds set; link_options.h)
//   The same interface over a cluster: the caller's code does not change.
//   The client reads the slot map from a seed (CLUSTER SHARDS, or CLUSTER
//   SLOTS before Redis 7) on a connection of its own, and sends each
//   command to the master that owns its key's slot (Command::slot(): the
//   key argument by the command's name, a script's first KEYS, or
//   route_by(key); keyless commands to any master), over one connection per
//   master it has needed so far - each a net::Connector connection with the
//   options above (deadlines, heartbeat, backoff, write queue cap). It
//   follows the cluster:
//     -MOVED slot addr   the slot has a new master: sent there, the map is
//                        read again (at most once per refresh_interval)
//     -ASK slot addr     a migration under way: ASKING + the command, once,
//                        on that node (the map does not change)
//     -CLUSTERDOWN, -TRYAGAIN, -LOADING, -MASTERDOWN: sent again after
//                        cluster.retry_delay
//     a master's connection lost: the map is read every refresh_interval
//                        until its replica is promoted (cluster-node-timeout
//                        plus an election), and once more when the
//                        connection is back; its commands wait for it
//     a command timed out on a master's connection (frozen, or cut off
//                        while the connection stays open): the map is read
//                        at once and every refresh_interval until that
//                        master answers again; Subscribers that follow this
//                        client (Subscriber::follow) apply the same maps
//   Commands that no open connection can take (no map yet, their master
//   unreachable or being replaced, a retry's delay) wait in one bounded
//   waiting room (max_buffered / max_buffered_bytes, as the single link's
//   buffer) with their deadlines; a command is answered exactly once: its
//   reply, or the error once its deadline passes (timed_out), its
//   connection drops while it is in flight (disconnected, unless retry),
//   or redirects exceed cluster.max_redirects (too_many_redirects). Several
//   commands to one slot keep their order unless a redirect sends one of
//   them again. masters() lists each master with its connection; stats()
//   counts each command once however many attempts it took, plus
//   redirects, slot-map reads and failovers.
//
// Durable writes (CommandOptions::durable, ClientOptions::wait_replicas)
//   Replication is asynchronous: a master that dies may take the writes it
//   acknowledged but had not yet sent to a replica with it. A durable write
//   is answered only when WAIT, sent after it on the same connection, says
//   wait_replicas replicas have it (else not_replicated, with the write's
//   reply). One WAIT covers every durable write sent before it, and one is
//   in flight per connection at a time (group commit): writes issued while
//   one is out wait for the next, so a slow or missing replica costs one
//   wait_timeout per round, not per write. Works on one redis-server with
//   replicas and on a cluster alike.
//
// Ownership and lifetime: the application owns the Client. Destroy it on the
//   loop thread, before the LoopWheel; its connection is closed without
//   callbacks and the callbacks of pending commands never run.
// Threads: the loop thread only (a broker serving several loops gives each
//   its own Client, or posts to the one loop that owns it).
// Re-entrancy: callbacks (commands', on_connect, on_disconnect, on_error)
//   may call command(), stop() and start(); they must not destroy the
//   Client. An exception thrown by a callback is swallowed and counted
//   (callback_exceptions).
// Cost: per command one encoding (at Command construction), one append to
//   the batch, one 128-byte queue entry and a 16-byte deadline mark (plus
//   the command's bytes while buffered, or while kept for retry or the
//   script fallback); per reply O(1) amortized plus the callback; per loop
//   iteration one write per connection. Cluster mode adds per command one
//   shared request (~200 bytes) and a copy of its bytes until its outcome
//   (to send it again after a redirect), one slot lookup; per client a
//   32 KiB slot table.
#pragma once

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/error.h>
#include <heartwheel/redis/link_options.h>
#include <heartwheel/redis/reply.h>
#include <heartwheel/redis/stats.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

namespace heartwheel::redis {

// A command's outcome (see "Outcomes"). The reply is nil unless Redis
// answered (error empty or server_error).
using Callback = std::function<void(std::error_code error, Reply reply)>;

struct CommandOptions {
  // < 0: ClientOptions::command_timeout; 0: no deadline; else this one.
  Duration timeout{-1};
  // For idempotent commands: if the connection drops while it is in flight,
  // send it again after the reconnect instead of failing with disconnected.
  // In cluster mode also after a failover, to the new master.
  bool retry = false;
  // An acknowledged write: with ClientOptions::wait_replicas > 0 it is
  // followed on the same connection by WAIT wait_replicas wait_timeout, and
  // its callback runs when WAIT answers: with the write's reply, and
  // errc::not_replicated if fewer replicas acknowledged it (the write did
  // run on the master). No effect when wait_replicas is 0.
  bool durable = false;
};

struct ClientOptions : LinkOptions {
  // Each command's deadline, from command() (time in the buffer counts);
  // 0 = none.
  Duration command_timeout = std::chrono::seconds(5);
  // Commands held while there is no connection; 0 = refuse at once.
  std::size_t max_buffered = 1024;
  std::size_t max_buffered_bytes = std::size_t{16} << 20;  // 16 MiB
  // Durable writes (CommandOptions::durable) wait for this many replicas to
  // acknowledge them (Redis's WAIT); 0: they do not wait. Replication is
  // asynchronous: without this, a write acknowledged by a master that dies
  // before its replica received it is lost in the failover.
  int wait_replicas = 0;
  // WAIT's own timeout (> 0 when wait_replicas is; WAIT 0 would block
  // forever). WAIT holds up the commands behind it on that connection while
  // replicas lag, for up to this long.
  Duration wait_timeout = std::chrono::seconds(1);

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

namespace detail {
class ClientImpl;
}
class Subscriber;

class Client {
 public:
  // Validates `options` (std::invalid_argument). Does not connect yet.
  Client(LoopWheel& wheel, ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts connecting (and reconnecting). Commands are accepted from now
  // on. No-op if started.
  void start();
  // Fails every pending command (buffered and in flight) with errc::stopped,
  // closes the connection and stops reconnecting. start() may follow.
  void stop();
  bool started() const noexcept;

  // Sends `command` (see "Outcomes" for the errors). `done` may be empty:
  // the outcome is then only counted.
  std::error_code command(Command command, Callback done, CommandOptions options = {});

  // An open connection (not closing). Cluster mode: the slot map is known
  // and every connection to a master that owns slots is open.
  bool connected() const noexcept;
  // Commands sent whose outcome has not come (timed-out ones, PINGs and
  // WAITs too; durable writes waiting for their WAIT).
  std::size_t in_flight() const noexcept;
  // Commands waiting for a connection (cluster: in the waiting room).
  std::size_t buffered() const noexcept;
  // Writes the pending batch now (normally the loop does, before it polls).
  void flush();

  // The counters, with the gauges filled in.
  LinkStats stats() const noexcept;
  // Cluster mode: every master of the slot map, with this client's
  // connection to it (connected, its counters) and the commands pending
  // for it; ordered by address. Empty for a single redis-server.
  std::vector<MasterStats> masters() const;
  const ClientOptions& options() const noexcept;

 private:
  friend class Subscriber;  // Subscriber::follow shares this client's slot map
  std::unique_ptr<detail::ClientImpl> core_;
};

}  // namespace heartwheel::redis
