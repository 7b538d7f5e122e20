// heartwheel/runtime/workers.h - N threads, each with its own libuv loop, timing
// wheel and SO_REUSEPORT listener on one shared port.
//
// Nothing is shared between workers on the I/O path: each thread has its own
// loop, LoopWheel, Server and Handler (made by the factory, on that thread),
// so no lock is taken per connection or per timer. The kernel spreads new
// connections over the listeners. The only cross-thread traffic is commands
// (drain, stop) through a uv_async_t and a statistics copy each worker
// publishes every `publish_interval` under a mutex.
//
// Threads: construct, start, drain, stop and join from any one controlling
// thread (normally main). snapshots() and total() also from any other thread
// once start() has returned (e.g. a metrics endpoint's), until destruction.
// Handlers run on their worker's thread.
#pragma once

#include <heartwheel/net/handler.h>
#include <heartwheel/net/server.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/timer/loop_wheel.h>

#include <functional>
#include <memory>
#include <vector>

namespace heartwheel::runtime {

struct WorkersOptions {
  unsigned threads = 1;
  // With threads > 1 (or when several processes share the port) reuse_port is
  // forced on. With port 0 the first worker picks the port, the rest join it.
  // With max_connections_per_ip, every worker's server counts in one
  // IpLimiter (one count per process; ip_limiter.h). max_connections and the
  // overload thresholds stay per worker loop.
  net::ServerOptions server;
  LoopWheel::Options wheel;
  // Listening sockets to adopt instead of opening new ones (a restart's
  // handover: net/restart.h): worker i takes listen_fds[i]
  // (ServerOptions::listen_fd); workers beyond the list open their own
  // (SO_REUSEPORT on the same port). Empty: every worker opens its own.
  std::vector<int> listen_fds;
  Duration publish_interval = std::chrono::milliseconds(500);
  // Optional: called on each worker's thread right after it published its
  // snapshot (every publish_interval, and once more when its loop ended),
  // with the worker's handler, so a program can copy the handler's own
  // counters (or the snapshot, e.g. into memory shared with other
  // processes) at the same moment. Must not block; an exception it throws
  // is swallowed (it would cross the event loop).
  std::function<void(unsigned worker_index, const net::LoopSnapshot&, net::Handler&)> on_publish;
  // Optional: called once on each worker's thread when its server has
  // drained or stopped (its connections are gone), with the worker's
  // handler: the moment to close what else keeps the loop alive (a Redis
  // link, a timer) so that the loop can end. An exception is swallowed.
  std::function<void(unsigned worker_index, net::Handler&)> on_finish;
};

class Workers {
 public:
  using HandlerFactory = std::function<std::unique_ptr<net::Handler>(unsigned worker_index)>;
  // The same, also given the worker's wheel (its loop is wheel.loop()), for
  // handlers that schedule on the loop from the start (not only once a
  // connection came). Called on the worker's thread, before it listens; the
  // handler is destroyed on that thread, before the wheel.
  using LoopHandlerFactory =
      std::function<std::unique_ptr<net::Handler>(unsigned worker_index, LoopWheel& wheel)>;

  // Validates options (throws std::invalid_argument). Starts nothing.
  Workers(WorkersOptions options, HandlerFactory factory);
  Workers(WorkersOptions options, LoopHandlerFactory factory);
  // Stops (closes every connection, reason local) and joins if still running.
  ~Workers();

  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Worker i adopts fds[i] instead of opening a listener (a restart's
  // handover: WorkersOptions::listen_fds). Precondition: not started.
  void adopt_listeners(std::vector<int> fds) { options_.listen_fds = std::move(fds); }
  // Starts the threads and returns once every worker listens. Throws
  // std::system_error with the first listen failure (everything started is
  // stopped and joined first).
  void start();
  // The shared port (valid after start()).
  int port() const noexcept { return port_; }
  unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()); }
  // The options in force (reuse_port forced on with several threads).
  const WorkersOptions& options() const noexcept { return options_; }

  // Asks every worker to drain (Server::drain) with `timeout` and `spread`
  // (> 0: the connections told gradually over it); each loop ends when its
  // connections are gone. Any thread, also a signal-handling loop.
  void drain(Duration timeout, Duration spread = {});
  // Each worker's listening socket, in worker order (valid from start()
  // until that worker stops listening): what a restart hands its successor
  // (net/restart.h). The descriptors stay the workers'.
  std::vector<int> listen_fds() const;
  // Asks every worker to close everything now and end.
  void stop();
  // Waits until every worker loop has ended. Idempotent.
  void join();
  // True until every worker loop has ended.
  bool running() const noexcept;

  // Each worker's last published counters (final ones after join()).
  std::vector<net::LoopSnapshot> snapshots() const;
  // All workers merged.
  net::LoopSnapshot total() const;

 private:
  struct Worker;
  WorkersOptions options_;
  LoopHandlerFactory factory_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int port_ = 0;
};

}  // namespace heartwheel::runtime
