// heartwheel/runtime/serve.h - serving until a signal: the main thread's job while
// runtime::Workers serve.
//
//   runtime::WorkersOptions options;
//   options.server.port = 7000;
//   options.server.connection.idle.read_idle = 30s;
//   runtime::serve(options, [](unsigned) { return std::make_unique<Echo>(); });
//
// serve() starts the workers, prints "listening on HOST:PORT" on stdout (or
// calls on_listening instead), and waits on the calling thread:
//   - the first SIGTERM or SIGINT drains the workers (Workers::drain with
//     drain_timeout: no new connections, each connection's handler gets
//     on_drain, whatever is left at the timeout is closed with reason drain);
//   - a second one stops them at once (Workers::stop, reason local);
//   - SIGUSR2 starts a successor with the listeners handed over and, once it
//     listens, drains (net/restart.h; ServeOptions::restart): "NAME: signal
//     12, starting a successor", then "NAME: restart: successor pid N
//     listens; draining (up to 10s)" or "NAME: error: restart: the successor
//     exited with status 2; still serving";
//   - it returns once every worker loop has ended, with the final counters.
// One line per signal goes to the process log (heartwheel/common/log.h) or
// to `log`:
//   "NAME: signal 15, draining (up to 10s)"
//   "NAME: second signal, closing everything now"
// An optional `tick` runs every tick_interval meanwhile (a stats file).
//
// Cost: the waiting thread has its own small libuv loop with two signal
// watchers and no timer while serving (plus `tick`'s, if set): an idle server
// never wakes it. Only after the first signal does it poll, every 10 ms,
// for the workers' end; the workers carry no hook into it.
//
// Signals: the watchers exist from before the workers start until serve()
// returns (a signal that arrives while they start is handled once waiting
// begins); then libuv restores the default dispositions (a program that
// installed its own SIGTERM/SIGINT handlers must not call serve). A process
// serves once at a time: one serve() per process.
// Threads: call from one thread (normally main); `tick`, `on_listening` and
// `log` run on it. The workers' handlers run on their own threads.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/runtime/workers.h>

#include <functional>
#include <string>
#include <string_view>

namespace heartwheel::runtime {

// SIGUSR2: start a successor and hand it the listeners (net/restart.h).
struct RestartOptions {
  // Off: SIGUSR2 keeps its default disposition (it ends the process).
  bool on_sigusr2 = true;
  // The metrics endpoint's listening socket to hand over too (-1 or empty:
  // none; the successor then binds its own).
  std::function<int()> metrics_fd{};
  // Called on the serving thread once the successor listens, before the
  // drain: the moment to stop what else accepts (the metrics endpoint, whose
  // /readyz would now say "draining" to probes the successor should answer).
  std::function<void()> on_handover{};
  // How long the successor may take to say it listens.
  Duration ready_timeout = std::chrono::seconds(60);
  // The connections are told to go (Handler::on_drain) spread over this
  // fraction of drain_timeout; the rest of it is for their last bytes.
  double spread = 0.8;
};

struct ServeOptions {
  // Names the program in the log lines; empty: the executable's name.
  std::string program{};
  // How long a drain waits for connections to finish before closing them.
  Duration drain_timeout = std::chrono::seconds(10);
  // `tick` runs every tick_interval on the calling thread while serving and
  // draining (0 or an empty tick: never). An exception it throws goes to
  // `log` as "NAME: error: WHAT" and serving goes on.
  Duration tick_interval{0};
  std::function<void()> tick{};
  // Called once every worker listens, before waiting for signals: the moment
  // to start what reads the workers (a metrics endpoint) and to tell the
  // world. Empty: announce("listening", host, port). An exception it throws
  // stops the workers and leaves serve() (see serve).
  std::function<void(Workers&)> on_listening{};
  // Where the signal and error lines go, whole ("NAME: WHAT", without a
  // newline). Empty (the default): the process log (heartwheel/common/log.h),
  // where a tick's exception is an error line. To silence them, a function
  // that does nothing.
  std::function<void(std::string_view line)> log{};
  // The restart on SIGUSR2 (on by default). A process started by such a
  // restart adopts the listeners it inherited (net::restart::inherited()).
  RestartOptions restart{};
};

// Starts `workers`, serves until signalled (above) and joins them.
// Preconditions: `workers` was not started; no other serve() is running in
// this process.
// Returns: workers.total() once every worker loop has ended. Serving also
// ends when something else drained or stopped the workers (a tick calling
// Workers::drain), noticed at the next tick.
// Errors: throws what Workers::start throws (std::system_error: cannot
// listen), std::system_error if the waiting loop or a signal watcher cannot
// be made, and what on_listening throws; when it throws, the workers are
// stopped and joined and the signal dispositions restored.
net::LoopSnapshot serve(Workers& workers, const ServeOptions& options = {});

// The same for workers made here from `options` and `factory` (the
// Workers constructor's std::invalid_argument on bad options).
net::LoopSnapshot serve(WorkersOptions options, Workers::HandlerFactory factory,
                        const ServeOptions& serve_options = {});

// Prints "WHAT on HOST:PORT" on stdout, an IPv6 host in brackets as
// parse_host_port takes it ("listening on [::1]:7000"), and flushes: scripts
// and tests wait for "listening on" (and "metrics on") before they connect.
void announce(std::string_view what, std::string_view host, int port);

}  // namespace heartwheel::runtime
