// heartwheel/runtime/prefork.h - P worker processes under one supervising parent,
// for hosts whose per-process descriptor limit caps one process far below
// the connection count (here: 20000 per process).
//
// The parent forks `processes` children, waits until each reports ready,
// then calls on_ready (print "listening on ..." there, once). It forwards
// SIGTERM and SIGINT to every child, reaps them, and collects the bytes each
// child passed to report() (e.g. a LoopSnapshot) so it can merge statistics.
// Children share a port through SO_REUSEPORT: the caller binds one socket in
// the parent before forking (open_reuseport_socket, not listening, which keeps
// the port reserved) and each child listens on that port with reuse_port.
//
// Call it from a process with no other threads (fork copies only the
// calling thread). Children must not return into the caller's stack: their
// result becomes their exit status (_exit).
//
// Signals: for the duration of the call the parent handles SIGTERM, SIGINT
// (forwarded to every child) and SIGCHLD (reaping), and with
// `forward_hangup` SIGHUP: forwarded to every child that has said ready
// (children reload on it, e.g. their TLS certificates); one not ready yet,
// and every child forked after a SIGHUP (a restart: it holds the parent's
// memory from before the reload), gets it once it says ready. Children must
// then handle SIGHUP from before they say ready. The dispositions found at
// the call are restored before it returns or throws. One run_prefork at a
// time per process. Children start with the default dispositions for the
// signals the parent handles, and inherit the others (without
// `forward_hangup`, SIGHUP's).
//
// A child is reaped when it has exited (waitpid), not when its pipe closes: a
// child that closes its pipe (say, it closes every descriptor) and keeps
// running stays supervised, receives forwarded signals and is reaped when it
// ends. One that closes its pipe before ready() counts as a failed start.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::runtime {

class PreforkChild {
 public:
  PreforkChild(unsigned index, int fd) noexcept : index_(index), fd_(fd) {}
  unsigned index() const noexcept { return index_; }
  // Tells the parent this child is serving. Call once.
  void ready() noexcept;
  // Hands `bytes` to the parent (call at most once, before returning).
  void report(std::string_view bytes) noexcept;

 private:
  unsigned index_;
  int fd_;
};

struct PreforkResult {
  int exit_code = 0;                 // 0 when every child exited with status 0
  std::vector<std::string> reports;  // per child, what it passed to report()
  std::vector<int> exit_statuses;    // per child, exit status (128 + signal if killed)
  bool all_ready = false;            // every child reported ready
  unsigned restarts = 0;             // children restarted after dying while serving
};

inline constexpr unsigned kPreforkMaxRestarts = 16;  // run_prefork's default

// Runs the children and supervises them until all have exited. A child that
// ends before it reported ready makes the parent stop the others (SIGTERM);
// the result then has all_ready == false. A child that dies while serving
// (no signal was forwarded) is forked again, up to `max_restarts` times in
// total; a restarted child's statistics die with the old process. Throws
// std::system_error if fork, pipe or poll fail (also while restarting a
// child), and passes on what on_ready throws; before any exception leaves,
// the children already running get SIGTERM, then SIGKILL after 10 s, and are
// reaped, and the signal dispositions are restored.
PreforkResult run_prefork(unsigned processes, const std::function<int(PreforkChild&)>& child_main,
                          const std::function<void()>& on_ready,
                          unsigned max_restarts = kPreforkMaxRestarts, bool forward_hangup = false);

}  // namespace heartwheel::runtime
