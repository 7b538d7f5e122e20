// rpc::NetHandler's heartbeat on the connection's ping and pong_timeout
// slots; the rule and why are in heartwheel/rpc/net_handler.h, "Heartbeat".
// The rule itself is net::SlotHeartbeat's (shared with the Redis link); this
// file sends the PING frames and measures round trips.
#include <heartwheel/net/connection.h>
#include <heartwheel/rpc/net_handler.h>

#include "session.h"

namespace heartwheel::rpc {

using net::Deadline;

void NetHandler::start_heartbeat(Session& s) { s.heartbeat.start(*s.conn, options_.heartbeat); }

void NetHandler::note_read(Session& s) { s.heartbeat.note_read(*s.conn); }

net::DeadlineAction NetHandler::on_ping_due(Session& s) {
  if (s.heartbeat.ping_due(*s.conn, options_.heartbeat)) {
    append(s, FrameType::ping, ++s.ping_seq, ping_payload(rtt_now(s)));
    ++stats_.pings_sent;
  }
  return net::DeadlineAction::keep;
}

bool NetHandler::ping(net::Connection& conn) {
  Session* s = session_of(conn);
  if (!s || conn.closing()) return false;
  append(*s, FrameType::ping, ++s->ping_seq, ping_payload(rtt_now(*s)));
  ++stats_.pings_sent;
  return true;
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
