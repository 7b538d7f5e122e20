// cli/serve_loop.h - the main thread's job while net::Workers serve: turn
// signals into a drain, run a periodic task (a stats file), return when every
// worker loop has ended.
//
//   net::Workers workers(options, factory);
//   workers.start();
//   std::printf("listening on ...\n");
//   heartwheel::cli::serve_until_signalled(workers, {.program = "heartwheel-http",
//       .drain_timeout = 10s, .tick_interval = 1s, .tick = [&] { write_stats(); }});
//   workers.join();
//
// The first SIGTERM or SIGINT drains the workers (net::Workers::drain with
// drain_timeout: each worker's server calls its handler's on_drain for every
// connection); a second one stops them at once (net::Workers::stop). One line
// on stderr per signal: "NAME: signal N, draining (up to 10s)", "NAME: second
// signal, closing everything now". Only after the first signal does the loop
// poll for the workers' end, so a serving process pays no wake-ups for it.
// Threads: the main thread (it owns the signal handlers); call once.
#pragma once

#include <heartwheel/net/workers.h>
#include <heartwheel/common/time.h>

#include <functional>
#include <string>
#include <string_view>

namespace heartwheel::cli {

struct ServeLoopOptions {
  std::string program;  // names the program in the stderr lines
  Duration drain_timeout = std::chrono::seconds(10);
  // `tick` runs every tick_interval on the main thread while the workers
  // serve (0 or an empty tick: never). An exception it throws is printed as
  // "NAME: error: WHAT" and the loop goes on.
  Duration tick_interval{0};
  std::function<void()> tick;
};

// Prints "WHAT on HOST:PORT" (an IPv6 host in brackets, as --listen takes it)
// and flushes stdout: scripts and tests wait for "listening on" and "metrics
// on" lines before they connect.
void announce(std::string_view what, std::string_view host, int port);

// announce("listening", ...), then "metrics on ADDRESS" unless
// `metrics_address` is empty (an Endpoint's address(), already formatted).
void announce_listening(std::string_view host, int port, std::string_view metrics_address = {});

// Returns once every worker loop has ended (after a drain or a stop). Throws
// std::system_error if the loop or a handle cannot be made.
void serve_until_signalled(net::Workers& workers, const ServeLoopOptions& options);

}  // namespace heartwheel::cli
