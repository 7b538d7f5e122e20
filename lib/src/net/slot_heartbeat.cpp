// The heartbeat on the ping / pong_timeout slots (slot_heartbeat.h).
//
// Cost on the I/O path: one clock read and one store per read callback
// (clearing an armed pong slot is one more store), one per batch written.
#include <heartwheel/net/slot_heartbeat.h>

#include <algorithm>
#include <chrono>

#include "random.h"

namespace heartwheel::net {

void SlotHeartbeat::start(Connection& conn, const HeartbeatConfig& hb) {
  const TimePoint now = conn.timers().now();
  last_read = last_write = last_ping = now;
  // Connections opened together (a reconnect storm) ping at spread times.
  const auto spread = std::chrono::duration_cast<Duration>(hb.interval * hb.jitter);
  conn.set_deadline(Deadline::ping,
                    deadline_after(now, hb.interval + detail::random_up_to(spread)));
  if (hb.set_tcp_user_timeout) conn.set_tcp_user_timeout(hb.effective_timeout());
}

bool SlotHeartbeat::ping_due(Connection& conn, const HeartbeatConfig& hb) noexcept {
  const TimePoint now = conn.timers().now();
  // The pong slot closes the connection in this same round: no last ping.
  if (conn.deadline(Deadline::pong_timeout) <= now) return false;
  // Due when nothing was read or nothing was written for an interval, and
  // at most once per interval (a read-idle peer is pinged every interval).
  const TimePoint quiet_since = std::max(std::min(last_read, last_write), last_ping);
  const TimePoint due = deadline_after(quiet_since, hb.interval);
  if (due > now) {  // activity since the slot was set: move it (lazy refresh)
    conn.set_deadline(Deadline::ping, due);
    return false;
  }
  last_ping = last_write = now;
  if (conn.deadline(Deadline::pong_timeout) == kNever) {
    // Dubbo's "nothing read for timeout", but the peer gets at least one
    // interval to answer this ping (after a stall of our own, for one).
    const TimePoint dead_at = std::max(deadline_after(last_read, hb.effective_timeout()),
                                       deadline_after(now, hb.interval));
    conn.set_deadline(Deadline::pong_timeout, dead_at);
  }
  conn.set_deadline(Deadline::ping, deadline_after(now, hb.interval));
  return true;
}

}  // namespace heartwheel::net
