// heartwheel/runtime/successor.h - starting this program's successor for a
// restart that refuses no connection (SIGUSR2 in runtime::serve; the
// handover and the successor's side are in heartwheel/net/restart.h).
//
// start_successor forks and execs /proc/self/exe's path (without the
// " (deleted)" a new build leaves: the new build is the point) with
// /proc/self/cmdline's arguments, the environment plus
// HEARTWHEEL_LISTEN_FDS, HEARTWHEEL_METRICS_FD and HEARTWHEEL_READY_FD, the
// handed-over descriptors kept open across exec and nothing else of ours,
// and waits for the successor's "ready" on the pipe.
//
// Ownership: the listeners stay this process's (it drains on them until it
// exits); the successor holds its own copies. Threads: call from the thread
// that serves; it blocks until the successor is ready or failed (at most
// ready_timeout, plus up to 5 s to reap one that is ending). Cost: one fork
// and exec; nothing while no restart is asked for.
#pragma once

#include <heartwheel/common/time.h>

#include <string>
#include <vector>

namespace heartwheel::runtime {

struct SuccessorOptions {
  std::vector<int> listeners;  // to hand over, in worker order
  int metrics = -1;            // the metrics listener, -1: none
  // How long the successor may take to listen before it is killed.
  Duration ready_timeout = std::chrono::seconds(60);
};

struct Successor {
  int pid = -1;
  std::string error;  // empty: it listens; else why not ("exited with status 2")
  bool ok() const noexcept { return error.empty(); }
};

// Starts the successor (above) and waits until it is ready or failed.
// Returns: its pid with an empty `error` once it said "ready". On failure
// (cannot read /proc, pipe or fork failed, it exited, closed its pipe
// without "ready" or stayed silent past ready_timeout) it is killed and
// reaped and `error` says why; nothing changed in this process. Never
// throws.
Successor start_successor(const SuccessorOptions& options) noexcept;

}  // namespace heartwheel::runtime
