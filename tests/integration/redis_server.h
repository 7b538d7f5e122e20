// A redis-server of the test's own (Debian's redis-server 7.0, installed by
// tools/install-deps): on a free loopback port, no persistence, started and
// stopped by PID through hwproc::Child. Restartable on the same port (a
// "Redis restart"), freezable (SIGSTOP/SIGCONT: a silent Redis), and a
// blocking one-command client for what "another node" does (PUBLISH, ...).
#pragma once

#include <heartwheel/redis/reply.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "process_support.h"

namespace hwtest {

class RedisServer {
 public:
  // Picks a free port (bind port 0, read it, close; a port taken before
  // redis-server binds it is retried with another) and starts. FAILs the
  // test if no redis-server answers PING within 10 s. `durable`: an
  // append-only file synced on every write (in the test's own directory),
  // so what Redis acknowledged survives kill() + restart().
  explicit RedisServer(bool durable = false);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  bool running() const { return child_ != nullptr; }

  // SIGKILL, and wait for the exit: the crash of a Redis.
  void kill();
  // Starts again on the same port; waits until it answers PING.
  void restart();
  // SIGSTOP / SIGCONT: a Redis that holds its connections and says nothing.
  void freeze();
  void thaw();

  // Runs one command on a fresh blocking connection (5 s limit; FAILs the
  // test if there is no answer) and returns the reply.
  heartwheel::redis::Reply command(std::vector<std::string_view> args);

 private:
  bool start_on(int port);  // false if it could not bind or answer
  hwproc::TempDir dir_;
  std::unique_ptr<hwproc::Child> child_;
  bool durable_ = false;
  int port_ = 0;
};

// A free loopback TCP port now (bind port 0 and close).
int free_port();

}  // namespace hwtest
