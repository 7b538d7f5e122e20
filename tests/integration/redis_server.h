// A redis-server of the test's own (Debian's redis-server 7.0, installed by
// tools/install-deps): on a free loopback port, no persistence, started and
// stopped by PID through hwproc::Child. Restartable on the same port (a
// "Redis restart"), freezable (SIGSTOP/SIGCONT: a silent Redis), and a
// blocking one-command client for what "another node" does (PUBLISH, ...).
//
// RedisCluster: six of them (or as asked) in cluster mode, made a cluster
// with `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`,
// cluster-node-timeout 2000 ms, each stopped by PID at the end; helpers to
// find a slot's master, kill or freeze a master, and migrate a slot by hand.
#pragma once

#include <heartwheel/redis/reply.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "closed_port.h"
#include "process_support.h"

namespace hwtest {

using hwproc::Ms;

struct RedisServerOptions {
  // An append-only file synced on every write (in the test's own
  // directory), so what Redis acknowledged survives kill() + restart().
  bool durable = false;
  // cluster-enabled, with its nodes.conf in its own directory. The port is
  // then below 55535 with port + 10000 (the cluster bus) free too.
  bool cluster = false;
  Ms cluster_node_timeout = Ms(2000);
  // Another Redis to replicate (REPLICAOF 127.0.0.1 replica_of); 0: none.
  int replica_of = 0;
  // A password: requirepass (AUTH password), or with `user` an ACL user
  // (AUTH user password) allowed everything, the default user switched off.
  // command() and the start-up PING authenticate with them.
  std::string password = {};
  std::string user = {};
  // TLS: with a certificate, Redis also listens on tls_port() with it and
  // asks every TLS client for a certificate it can verify with tls_ca
  // (tls-auth-clients, Redis's default). The plain port stays for command().
  std::string tls_cert = {};
  std::string tls_key = {};
  std::string tls_ca = {};
};

class RedisServer {
 public:
  // Picks a free port (bind port 0, read it, close; a port taken before
  // redis-server binds it is retried with another) and starts. FAILs the
  // test if no redis-server answers PING within 10 s. `durable`: see
  // RedisServerOptions.
  explicit RedisServer(bool durable = false);
  explicit RedisServer(const RedisServerOptions& options);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  // The TLS port (RedisServerOptions::tls_cert); 0 without TLS.
  int tls_port() const { return tls_port_; }
  bool running() const { return child_ != nullptr; }
  // Running and not frozen: it answers.
  bool answering() const { return running() && !frozen_; }

  // SIGKILL, and wait for the exit: the crash of a Redis. Its ports (and a
  // cluster node's bus port) are held (closed_port.h: connects refused)
  // until restart(): free, one could be taken meanwhile by a parallel
  // test's listener or by a reconnecting client connecting to itself
  // through it, and then Redis could not bind it again.
  void kill();
  // Starts again on the same port; waits until it answers PING.
  void restart();
  // SIGSTOP / SIGCONT: a Redis that holds its connections and says nothing.
  void freeze();
  void thaw();

  // Runs one command on a fresh blocking connection (5 s limit; FAILs the
  // test if there is no answer) and returns the reply; AUTH first when the
  // options have a password.
  heartwheel::redis::Reply command(std::vector<std::string_view> args);

 private:
  bool start_on(int port);  // false if it could not bind or answer
  hwproc::TempDir dir_;
  std::unique_ptr<hwproc::Child> child_;
  std::vector<std::unique_ptr<heartwheel::test::ClosedPort>> held_;  // from kill() to restart()
  RedisServerOptions options_;
  int port_ = 0;
  int tls_port_ = 0;
  bool frozen_ = false;
};

// A free loopback TCP port now (bind port 0 and close).
int free_port();

// One command on a fresh blocking connection to 127.0.0.1:`port`; nullopt
// if it cannot connect or no full reply comes within `limit`. Any thread.
std::optional<heartwheel::redis::Reply> try_command(int port, std::vector<std::string_view> args,
                                                    Ms limit = Ms(5000));

class RedisCluster {
 public:
  // `masters` masters with `replicas` replicas each; FAILs the test if the
  // cluster is not ok within 30 s.
  explicit RedisCluster(int masters = 3, int replicas = 1);
  ~RedisCluster();  // each node killed by PID (RedisServer)
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // "127.0.0.1:PORT" of every node, for ClusterOptions::seeds.
  std::vector<std::string> seeds() const;
  std::vector<int> ports() const;
  // Ports of the masters that own slots now, in slot order (asked of a live
  // node).
  std::vector<int> masters();
  // The port of the master that owns `slot` now.
  int master_of(std::uint16_t slot);
  // A node's id (CLUSTER MYID).
  std::string id_of(int port);
  // SIGKILL of the node on `port` (a master's death).
  void kill(int port);
  // Starts it again on its port with its nodes.conf: it rejoins the
  // cluster (a killed master whose replica took over comes back as that
  // replica's replica).
  void restart(int port);
  // SIGSTOP / SIGCONT of the node on `port`: a master that holds its
  // connections open and says nothing (as one cut off by a partition does
  // until the heartbeats give up); the others fail it over after
  // cluster-node-timeout. The helpers below ask only nodes that answer.
  void freeze(int port);
  void thaw(int port);
  bool alive(int port) const;
  // Waits until every live node reports cluster_state:ok and all of them
  // name the same live master for every slot. False after `limit`.
  bool wait_until_ok(Ms limit = Ms(30000));

  // A slot's migration by hand, in Redis's steps (what redis-cli
  // --cluster reshard does): begin (the target IMPORTING, the source
  // MIGRATING: from now on the source answers ASK for keys it no longer
  // has), move_keys (MIGRATE every key of the slot), finish (SETSLOT NODE on
  // every master: from now on the source answers MOVED). Return false on a
  // failed step (for use from a loop's callbacks; no REQUIRE inside).
  bool begin_migration(std::uint16_t slot, int from, int to);
  bool move_keys(std::uint16_t slot, int from, int to);
  bool finish_migration(std::uint16_t slot, int from, int to);

  // A blocking command to the node on `port` (FAILs the test if it fails).
  heartwheel::redis::Reply command(int port, std::vector<std::string_view> args);

 private:
  RedisServer* server(int port) const;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace hwtest
