// heartwheel/redis/link_options.h - what every Redis link (Client,
// Subscriber) is configured with: where Redis is, how the connection is kept,
// what it sends first, and its connection events.
//
// A link is ONE connection speaking RESP2, kept by a net::Pool of one
// endpoint (net/pool.h: a net::Connector and the pool's heartbeat, the code
// every client connection of the library runs), so it gets what every
// heartwheel connection gets (net/connector.h): a connect timeout,
// reconnects with exponential backoff and jitter, and its timeouts as slots
// of the connection's deadline set (no wheel entries of its own):
//   - ping / pong_timeout: net::SlotHeartbeat's rule (slot_heartbeat.h): a
//     PING when nothing was read or nothing was written for
//     heartbeat.interval; no byte from Redis for heartbeat's timeout while a
//     PING is out closes the connection with CloseReason::pong_timeout (a
//     frozen Redis, a dead host, a cut network), and the connector
//     reconnects.
//   - request_timeout: the Client's per-command deadlines (client.h).
// The defaults suit a Redis on the same network: connect timeout 2 s,
// backoff 100 ms doubling to 5 s with 20% jitter, a PING after 5 s of quiet,
// closed after 15 s of silence.
//
// Redis Cluster: with cluster.seeds set, a link speaks Redis Cluster instead
// of talking to connector.host:port: it reads the slot map from a seed, keeps
// one such connection per master it needs (each with the connector,
// heartbeat and setup options above, at that master's address) and follows
// the cluster as it changes (client.h, subscriber.h, lib/src/redis/README.md).
// Threads: plain values.
#pragma once

#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/connector.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/reader.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::redis {

inline constexpr int kDefaultPort = 6379;

struct ClusterOptions {
  // Seed nodes, "HOST:PORT" each (numeric addresses, as the connector takes;
  // "localhost" is read as 127.0.0.1). Any live node of the cluster will do:
  // the others are learnt from its slot map. Empty: not a cluster (the link
  // talks to connector.host:port).
  std::vector<std::string> seeds;
  // MOVED / ASK redirects one command may follow before it fails with
  // errc::too_many_redirects (a redirect loop: the cluster is being
  // reconfigured faster than it settles).
  int max_redirects = 5;
  // A command answered CLUSTERDOWN, TRYAGAIN, LOADING or MASTERDOWN (a
  // failover or a migration under way), or waiting for a master that is
  // unreachable, is tried again after this, as long as its deadline allows.
  Duration retry_delay = std::chrono::milliseconds(100);
  // Commands with no deadline are tried at most this many times.
  int max_retries = 50;
  // The slot map is read again at most this often (MOVED replies coalesce),
  // and this often while a master is unreachable (to see its replica take
  // over: Redis promotes one after cluster-node-timeout and an election).
  Duration refresh_interval = std::chrono::milliseconds(200);
  // A slot map read (CLUSTER SHARDS, or CLUSTER SLOTS before Redis 7)
  // unanswered for this long is given up; the next seed or node is asked.
  Duration refresh_timeout = std::chrono::seconds(1);

  bool enabled() const noexcept { return !seeds.empty(); }
  // Throws std::invalid_argument naming the bad field (a seed that is not
  // HOST:PORT included).
  void validate() const;
};

// ConnectorOptions for Redis: 127.0.0.1:6379, the backoff above, and a write
// policy that never stops reading (slow_reader = close): a link that paused
// reading while its writes queue up could deadlock against Redis, which stops
// reading a client whose replies it cannot write.
net::ConnectorOptions default_connector_options();

struct LinkOptions {
  net::ConnectorOptions connector = default_connector_options();
  // interval 0 switches the heartbeat (and its pong_timeout close) off.
  net::HeartbeatConfig heartbeat{.interval = std::chrono::seconds(5)};
  // Credentials, sent first on every connection the link opens (auth.h):
  // AUTH user password (an ACL user, Redis 6+), or AUTH password without a
  // user. Empty password: no AUTH. A refusal closes that connection
  // (auth_failures, errc::auth_failed to on_error naming the address, the
  // user and Redis's reason, never the password); the connector retries
  // after its backoff.
  std::string user;
  std::string password;
  // Sent next on every connection, after the AUTH, e.g.
  //   {{"SELECT", "2"}, {"CLIENT", "SETNAME", "push-1"}}.
  // An error reply closes that connection (CloseReason::protocol_error,
  // counted in setup_errors, reported to on_error); the connector then tries
  // again after its backoff.
  std::vector<Command> setup;
  // TLS (or any transport) on the link: connector.transport, e.g.
  // tls::client_transport(context, "redis.example") (heartwheel/tls). A
  // cluster link uses it for every node too, unless node_transport is set:
  // then the transport of a node at `host`:`port` is node_transport(host,
  // port) (a TLS transport naming that node, so its certificate is checked
  // against its own address; the port lets a program's log name the node).
  // Called on the link's loop thread when a node's connection is made; it
  // may return null (plain).
  std::function<std::shared_ptr<net::ByteStageFactory>(const std::string& host, int port)>
      node_transport;
  // Redis Cluster: see above. Empty seeds: a single redis-server.
  ClusterOptions cluster;
  // A reply larger than this closes the connection (protocol_errors).
  std::size_t max_reply_bytes = kDefaultMaxReplyBytes;
  // The link's writes are batched per loop iteration; a batch this large is
  // written at once (> 0).
  std::size_t flush_bytes = 64 * 1024;

  // A connection opened (the setup commands are on their way). In cluster
  // mode: each connection to each node (and the one reading the slot map).
  std::function<void()> on_connect;
  // The connection closed: pong_timeout, peer_closed (Redis went away),
  // protocol_error, local (stop()), error (the socket failed: `error` says
  // how). The connector reconnects unless stopped. In cluster mode: any of
  // them (a connection to a master that lost its slots is closed `local`).
  std::function<void(net::CloseReason reason, std::error_code error)> on_disconnect;
  // Something the application may want to log: a refused AUTH or a NOAUTH
  // (auth_failed, auth_failure_detail's text), a setup command's error
  // (server_error, Redis's text) or bytes that are not RESP2
  // (protocol_error / frame_too_large, hiredis's text).
  std::function<void(std::error_code error, std::string_view detail)> on_error;

  // Throws std::invalid_argument naming the bad field (also the connector's
  // and heartbeat's).
  void validate() const;
};

}  // namespace heartwheel::redis
