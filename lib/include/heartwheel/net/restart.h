// heartwheel/net/restart.h - a restart that refuses no connection, as this
// process sees it: what its predecessor handed it, telling it (and systemd)
// that it listens, and whether it drains or was replaced. The layers that
// serve read it (metrics::endpoint_at adopts the metrics listener,
// ws::NetHandler closes with 1012 once replaced, the programs' /readyz says
// "draining"); starting the successor is the runtime layer's
// (heartwheel/runtime/successor.h, run by runtime::serve on SIGUSR2).
//
// The handover (nginx's binary upgrade, SIGUSR2):
//   1. the old process forks and execs /proc/self/exe's path with
//      /proc/self/cmdline (the same program and flags, so the same --config
//      FILE), the listeners inherited: HEARTWHEEL_LISTEN_FDS="3,4" (one per
//      worker, in order), HEARTWHEEL_METRICS_FD (the metrics endpoint's, if
//      any), HEARTWHEEL_READY_FD (a pipe's write end);
//   2. the successor's workers adopt those sockets (ServerOptions::listen_fd)
//      instead of binding: the port is never closed, and the connections
//      queued on it are accepted by whichever process accepts next (with
//      SO_REUSEPORT alone, a new socket beside the old one, the old one's
//      queue would be lost when it closes);
//   3. once it listens it writes "ready" on the pipe (announce_ready; cli's
//      announce_listening does), rewrites --pid-file and tells systemd
//      MAINPID=its pid (NOTIFY_SOCKET, with NotifyAccess=all);
//   4. the old process then stops accepting and drains: each connection's
//      handler is told in turn, spread over most of --drain-timeout
//      (WebSocket: close 1012 "service restart"), and exits.
// A successor that exits, or says nothing within its ready timeout, is
// killed and reaped; the old process logs why and goes on serving.
//
// Why inheritance and not SCM_RIGHTS over a unix socket (HAProxy's -x): the
// successor is our own child, so fork+exec passes the descriptors with no
// socket path, permissions or protocol to get wrong; HAProxy needs a socket
// because its new process is started by someone else.
//
// Threads: inherited() and announce_ready() from main() (the first call
// reads and clears the environment); the flags (draining, replaced) from any
// thread.
#pragma once

#include <vector>

namespace heartwheel::net::restart {

// The environment a predecessor hands its successor (above).
inline constexpr const char* kListenFdsVariable = "HEARTWHEEL_LISTEN_FDS";
inline constexpr const char* kMetricsFdVariable = "HEARTWHEEL_METRICS_FD";
inline constexpr const char* kReadyFdVariable = "HEARTWHEEL_READY_FD";

// What a successor was given by its predecessor (all empty / -1 otherwise).
struct Inherited {
  std::vector<int> listeners;  // the workers' listening sockets, in worker order
  int metrics = -1;            // the metrics endpoint's listening socket
  int ready_fd = -1;           // where announce_ready() says so
};

// Reads HEARTWHEEL_LISTEN_FDS, HEARTWHEEL_METRICS_FD and HEARTWHEEL_READY_FD
// on the first call and removes them from the environment (a later restart
// sets its own); marks the descriptors close-on-exec. Later calls return the
// same. A malformed variable is ignored (nothing inherited).
const Inherited& inherited();

// Tells the predecessor (its pipe, once) and systemd (MAINPID, READY=1,
// when NOTIFY_SOCKET is set) that this process listens. Idempotent.
void announce_ready() noexcept;

// This process drains (a signal, or a successor took over): readiness
// answers "not ready". Any thread.
void set_draining() noexcept;
bool draining() noexcept;
// A successor took over: handlers close with "service restart" (WebSocket
// 1012) instead of "going away" (1001). Any thread.
void set_replaced() noexcept;
bool replaced() noexcept;

}  // namespace heartwheel::net::restart
