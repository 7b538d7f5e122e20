// uv_idle_baseline.h - the comparison baseline of heartwheel-echo --timers uv:
// every connection's idle timeouts on a uv_timer_t of its own (libuv's timer
// heap, run before I/O polling), what a libuv user writes without a wheel.
// Built on the library's public API only; the library itself has no such
// backend.
//
// How: the server's connections run with net's idle timeouts off
// (net_policy()); a Handler wrapper (wrap()) gives each connection a heap
// block with a uv_timer_t and the times of its last idle events, armed at
// the earliest of read idle, write idle, all idle and max age. The
// semantics are the deadline set's (deadline_set.h): activity is the
// connection's own stamps (Connection::last_read / last_write, jitter
// included), an idle event repeats every timeout with first == false while
// the connection stays idle, the wrapped handler's on_deadline decides, and
// DeadlineAction::close closes with the reason of the same name. Refresh as
// IdlePolicy::refresh says: lazy (the timer fires at the deadline it was
// armed for, sees newer activity and re-arms) or eager (re-armed after every
// on_data, writes made there included; writes completing later are seen when
// the timer fires).
//
// Statistics: closes count in the server's NetStats as always; the timer's
// wake-ups (connection_timers) and the idle events (idle_events), which net
// counts for its own deadlines, are counted per worker here and published
// with WorkersOptions::on_publish (publish()); add_to() puts them into a
// snapshot before it is printed or scraped.
//
// Limits: the wrapped handler must not replace the connection's handler
// (Connection::set_handler) or use its user data (the wrapper keeps its
// block there); a connection behind a PROXY header is tracked from the
// moment its handler sees it.
//
// Threads: one wrapper per worker loop, called on that loop's thread;
// publish() on the worker's thread, add_to() from any thread.
#pragma once

#include <heartwheel/net/handler.h>
#include <heartwheel/net/idle_policy.h>
#include <heartwheel/net/stats.h>

#include <memory>
#include <mutex>
#include <vector>

namespace heartwheel::bench {

class UvIdleBaseline {
 public:
  // `policy`: the idle timeouts and refresh mode the baseline enforces;
  // `workers`: worker loops per process (for the statistics).
  UvIdleBaseline(const net::IdlePolicy& policy, unsigned workers);

  // The policy the server's connections get: `policy` with every idle
  // timeout and max age off and lazy refresh; jitter kept, so the
  // connections' activity stamps start where net would have started them.
  net::IdlePolicy net_policy() const;

  // A handler that tracks its connections' idle timeouts on uv_timer_t's and
  // passes every callback on to `inner`. One per worker loop.
  std::unique_ptr<net::Handler> wrap(std::unique_ptr<net::Handler> inner);
  // The same around a handler it does not own (it must outlive the wrapper).
  std::unique_ptr<net::Handler> wrap(net::Handler& inner);

  // From WorkersOptions::on_publish (the worker's thread): copies the
  // counters of `handler`, a wrapper made by wrap() for `worker`.
  void publish(unsigned worker, net::Handler& handler);
  // `snapshot` with every worker's published counters added (only_worker:
  // only that one's, for a per-worker snapshot).
  net::LoopSnapshot add_to(net::LoopSnapshot snapshot, int only_worker = -1) const;

 private:
  class Wrapper;
  net::IdlePolicy policy_;
  mutable std::mutex mutex_;
  std::vector<net::NetStats> published_;  // per worker
};

}  // namespace heartwheel::bench
