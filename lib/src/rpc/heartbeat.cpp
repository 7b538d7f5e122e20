// rpc::NetHandler's heartbeat on the connection's ping and pong_timeout
// slots; the rule and why are in heartwheel/rpc/net_handler.h, "Heartbeat".
//
// Cost on the I/O path: one clock read and one store per read callback
// (last_read; clearing an armed pong slot is one more store), one per batch
// (last_write). The ping slot is refreshed lazily: it fires at the time it
// was set for and moves itself if there was activity since.
#include <heartwheel/net/connection.h>
#include <heartwheel/rpc/net_handler.h>

#include <algorithm>
#include <chrono>

#include "../net/random.h"
#include "session.h"

namespace heartwheel::rpc {

using net::Deadline;

void NetHandler::start_heartbeat(Session& s) {
  net::Connection& conn = *s.conn;
  const net::HeartbeatConfig& hb = options_.heartbeat;
  const TimePoint now = conn.timers().now();
  s.last_read = s.last_write = s.last_ping = now;
  // Connections opened together (a reconnect storm) ping at spread times.
  const auto spread = std::chrono::duration_cast<Duration>(hb.interval * hb.jitter);
  conn.set_deadline(Deadline::ping,
                    deadline_after(now, hb.interval + net::detail::random_up_to(spread)));
  if (hb.set_tcp_user_timeout) conn.set_tcp_user_timeout(hb.effective_timeout());
}

void NetHandler::note_read(Session& s) {
  net::Connection& conn = *s.conn;
  s.last_read = conn.timers().now();
  // Any byte is life: the ping in flight needs no particular answer.
  if (conn.deadline(Deadline::pong_timeout) != kNever) conn.clear_deadline(Deadline::pong_timeout);
}

net::DeadlineAction NetHandler::on_ping_due(Session& s) {
  net::Connection& conn = *s.conn;
  const net::HeartbeatConfig& hb = options_.heartbeat;
  const TimePoint now = conn.timers().now();
  // The pong slot closes the connection in this same round: no last ping.
  if (conn.deadline(Deadline::pong_timeout) <= now) return net::DeadlineAction::keep;
  // Due when nothing was read or nothing was written for an interval, and
  // at most once per interval (a read-idle peer is pinged every interval).
  const TimePoint quiet_since = std::max(std::min(s.last_read, s.last_write), s.last_ping);
  const TimePoint due = deadline_after(quiet_since, hb.interval);
  if (due > now) {  // activity since the slot was set: move it (lazy refresh)
    conn.set_deadline(Deadline::ping, due);
    return net::DeadlineAction::keep;
  }
  append(s, FrameType::ping, ++s.ping_seq, ping_payload(rtt_now(s)));
  s.last_ping = s.last_write = now;
  ++stats_.pings_sent;
  if (conn.deadline(Deadline::pong_timeout) == kNever) {
    // Dubbo's "nothing read for timeout", but the peer gets at least one
    // interval to answer this ping (after a stall of our own, for one).
    const TimePoint dead_at = std::max(deadline_after(s.last_read, hb.effective_timeout()),
                                       deadline_after(now, hb.interval));
    conn.set_deadline(Deadline::pong_timeout, dead_at);
  }
  conn.set_deadline(Deadline::ping, deadline_after(now, hb.interval));
  return net::DeadlineAction::keep;
}

net::DeadlineAction NetHandler::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  Session* s = session_of(conn);
  if (s && heartbeat_on() && event.kind == Deadline::ping) return on_ping_due(*s);
  // pong_timeout (counted in on_close) and the application's idle policy
  // slots: the default, close with that slot's reason.
  return net::DeadlineAction::close;
}

void NetHandler::on_pong_frame(Session& s, const FrameView& f) {
  ++stats_.pongs_received;
  const auto sent = ping_sent_at(f.payload);
  if (!sent) return;
  const Duration rtt = rtt_now(s) - *sent;
  if (rtt.count() < 0) return;  // not a time of ours
  s.last_rtt = rtt;
  if (options_.on_heartbeat_rtt) options_.on_heartbeat_rtt(*s.conn, rtt);
}

TimePoint NetHandler::rtt_now(const Session& s) const noexcept {
  return options_.clock ? options_.clock() : s.conn->timers().now();
}

HeartbeatInfo NetHandler::heartbeat(const net::Connection& conn) const noexcept {
  const Session* s = session_of(conn);
  if (!s) return {};
  return {s->last_rtt, s->ping_seq, conn.deadline(Deadline::pong_timeout)};
}

}  // namespace heartwheel::rpc
