// heartwheel/net/slot_heartbeat.h - a heartbeat on a connection's ping and
// pong_timeout slots, for protocols that send pings of their own
// (rpc::NetHandler's PING frames, redis::Client's and redis::Subscriber's
// PING commands).
//
// The rule (Dubbo's, with net::HeartbeatConfig's numbers; the full argument
// is in heartwheel/rpc/net_handler.h, "Heartbeat"):
//   - ping slot: when nothing was READ or nothing was WRITTEN for `interval`,
//     ping (at most once per interval). Reads and writes only store a
//     timestamp; the slot fires at the time it was set for, sees newer
//     activity and moves itself (lazy refresh).
//   - pong_timeout slot: armed when a ping goes out, for the last byte read +
//     effective_timeout(), never sooner than one interval after that ping.
//     ANY byte read clears it. When it passes the protocol lets it close the
//     connection (CloseReason::pong_timeout).
//   So a silent peer is closed `timeout` after its last byte, never earlier,
//   and a live one always has at least one interval to answer a ping.
//
// Use: one SlotHeartbeat per connection in the protocol's own state (24
// bytes; a Connection carries none). start() on open, note_read() on every
// read, note_write() when a batch of bytes starts, and ping_due() when the
// ping slot fires: when it returns true, send the ping (both slots are
// already set for it). TCP_USER_TIMEOUT is set to the timeout when the
// config asks for it; the first ping of each connection is delayed by up to
// jitter x interval, so connections opened together do not ping together.
// Threads: the connection's loop thread.
#pragma once

#include <heartwheel/net/connection.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/common/time.h>

namespace heartwheel::net {

struct SlotHeartbeat {
  TimePoint last_read{};
  TimePoint last_write{};
  TimePoint last_ping{};

  // Stamps now and sets the ping slot (interval + up to jitter x interval).
  void start(Connection& conn, const HeartbeatConfig& config);
  // Bytes arrived: life. Clears an armed pong_timeout (one more store).
  void note_read(Connection& conn) noexcept {
    last_read = conn.timers().now();
    if (conn.deadline(Deadline::pong_timeout) != kNever)
      conn.clear_deadline(Deadline::pong_timeout);
  }
  void note_write(TimePoint now) noexcept { last_write = now; }
  // The ping slot fired. True: send a ping now (last_ping and last_write are
  // stamped, the pong_timeout and next ping slots set). False: nothing to
  // send (activity since; the slot moved), or the pong slot closes the
  // connection in this same round.
  bool ping_due(Connection& conn, const HeartbeatConfig& config) noexcept;
};

}  // namespace heartwheel::net
