// See heartwheel/net/heartbeat.h.
#include <heartwheel/net/heartbeat.h>

#include <stdexcept>
#include <string>

#include <heartwheel/common/duration_parse.h>

namespace heartwheel::net {

void HeartbeatConfig::validate() const {
  if (interval.count() <= 0)
    throw std::invalid_argument("heartbeat: interval must be positive (got " +
                                format_duration(interval) + ")");
  if (jitter < 0 || jitter > 1)
    throw std::invalid_argument("heartbeat: jitter is a fraction of the interval, between 0 and 1");
  const Duration t = effective_timeout();
  if (t < 2 * interval)
    throw std::invalid_argument(
        "heartbeat: timeout " + format_duration(t) + " is under twice the interval " +
        format_duration(interval) +
        ": one lost ping would close a healthy connection; use a timeout of at "
        "least " +
        format_duration(2 * interval) + " (Dubbo uses 3x)");
}

Heartbeat::Heartbeat(HeartbeatConfig config, SendPing send_ping)
    : config_(config), send_ping_(std::move(send_ping)) {
  config_.validate();
  if (!send_ping_) throw std::invalid_argument("heartbeat: send_ping is required");
}

IdlePolicy Heartbeat::idle_policy(IdlePolicy base) const noexcept {
  base.write_idle = config_.interval;
  base.read_idle = config_.effective_timeout();
  base.jitter = std::chrono::duration_cast<Duration>(config_.interval * config_.jitter);
  return base;
}

ConnectionOptions Heartbeat::connection_options(ConnectionOptions base) const noexcept {
  base.idle = idle_policy(base.idle);
  if (config_.set_tcp_user_timeout) base.tcp_user_timeout = config_.effective_timeout();
  return base;
}

DeadlineAction Heartbeat::on_deadline(Connection& conn, DeadlineEvent event,
                                      HeartbeatState& hb) const {
  if (event.kind != Deadline::write_idle) return DeadlineAction::close;
  // A ping still unanswered keeps its send time, so the RTT of a late pong
  // is measured from the first ping rather than the latest.
  if (!hb.awaiting_pong) hb.ping_sent_at = conn.timers().now();
  hb.awaiting_pong = true;
  ++hb.pings_sent;
  send_ping_(conn);
  return DeadlineAction::keep;
}

void Heartbeat::on_pong(const Connection& conn, HeartbeatState& hb) const noexcept {
  if (!hb.awaiting_pong) return;
  hb.awaiting_pong = false;
  hb.last_rtt = conn.timers().now() - hb.ping_sent_at;
}

}  // namespace heartwheel::net
