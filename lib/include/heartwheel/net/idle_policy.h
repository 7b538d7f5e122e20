// heartwheel/net/idle_policy.h - when a connection counts as idle.
//
// Semantics follow Netty's IdleStateHandler: a read-idle event fires when
// nothing was read for `read_idle`; if the connection stays silent, the event
// repeats every `read_idle` with first == false; any read re-arms it with
// first == true. Write idle counts bytes that reached the socket (completed or
// progressing writes), not bytes queued. All idle = neither read nor written.
// A zero duration switches that check off; a huge one (Duration::max()) never
// fires: every deadline is computed with deadline_after() (time.h), which
// saturates at kNever instead of wrapping. The events are the deadline
// slots read_idle, write_idle, all_idle and max_age (deadline.h).
//
// Refresh on I/O (RefreshMode):
//   lazy  - I/O stores a timestamp only; the connection's single timer entry
//           fires at the earliest deadline it was armed for, sees the recent
//           activity and re-arms for the remaining time. Cost on the I/O path:
//           one store. Default (see lib/src/net/README.md for measurements).
//   eager - I/O moves the timer entry to the new deadline (O(1) in the wheel).
//           Fires exactly when due; costs a relink on every read/write.
// Threads: plain values, any thread.
#pragma once

#include <cstdint>

#include <heartwheel/common/time.h>

namespace heartwheel::net {

enum class RefreshMode : std::uint8_t { lazy, eager };

struct IdlePolicy {
  Duration read_idle{0};
  Duration write_idle{0};
  Duration all_idle{0};
  // The connection is closed (reason max_age) this long after it opened.
  Duration max_age{0};
  // Spreads connections opened together: each connection's first idle
  // deadlines move later by a random amount in [0, jitter]. Never earlier.
  Duration jitter{0};
  RefreshMode refresh = RefreshMode::lazy;

  bool any() const noexcept {
    return read_idle.count() > 0 || write_idle.count() > 0 || all_idle.count() > 0 ||
           max_age.count() > 0;
  }
  // Throws std::invalid_argument naming the negative field.
  void validate() const;
};

}  // namespace heartwheel::net
