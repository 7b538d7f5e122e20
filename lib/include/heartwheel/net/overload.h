// heartwheel/net/overload.h - overload protection for a net::Server: idle
// timeouts that shrink under pressure, and the idlest connections dropped to
// admit new ones at the connection limit.
//
// Scaled idle timeouts (Envoy's overload manager, `reduce_timeouts`)
//   Pressure p in [0, 1] says how far the server's open connections have come
//   from `start_connections` to `saturation_connections`; with memory
//   thresholds set, the process's resident memory counts the same way, and
//   the larger of the two wins:
//       p = clamp((x - start) / (saturation - start), 0, 1)
//   The idle timeouts of the server's IdlePolicy (read_idle, write_idle,
//   all_idle; never max_age) shrink linearly with p, down to a floor reached
//   at saturation:
//       timeout(p) = floor + (timeout - floor) * (1 - p)
//       floor      = min(timeout, min_timeout) when min_timeout > 0,
//                    else timeout * min_scale
//   p is kept in steps of 1/kPressureSteps so that a connection count that
//   moves by one does not count as a new scale every time. The scale
//   (1 - p) is a gauge in the statistics (NetStats::overload.idle_scale).
//
//   How a new scale reaches the connections (the cost and its trade-off):
//   every connection of a server reads its idle timeouts from ONE policy
//   object the server owns, so applying a scale is three stores, not a walk
//   over the connections. A connection's wheel entry stays armed where it
//   was; when it fires it judges its slots with the timeouts in force then
//   and re-arms (the lazy refresh). Alone, that means a connection silent
//   since before the pressure closes at its UNSCALED deadline: up to
//   (1 - scale) x timeout late, once. To make the scale bite soon the server
//   keeps its connections in order of their last read (ActivityList, a
//   generation stamp: at most one move per connection per
//   `activity_granularity`) and re-arms only the front of that order, as
//   Envoy's scaled timer manager re-arms only the front of each queue: for
//   one policy, ordering by last read is the same at every scale, so the
//   connections whose scaled deadline comes first are the oldest. One timer
//   entry of the server (the sweeper) walks a cursor from the oldest
//   connection toward the newest, re-arming each (one O(1) wheel move) shortly
//   before its scaled read-idle deadline, and sleeps until the next one is
//   near. Each connection is visited at most once per scale decrease, and
//   only when its deadline is near, so the total work is at most one re-arm
//   per connection that goes silent, spread in time like the expiries
//   themselves; a decrease restarts the cursor (at most once per
//   granularity). Measured in docs/BENCHMARKS.md ("Overload protection").
//   Limits: the order is by reads, so a policy with write_idle only gets the
//   lazy behaviour; connections with their own policy
//   (Connection::set_idle_policy) are not scaled; protocol slots that are
//   idle timeouts (HTTP keep-alive) are scaled when they are set
//   (Connection::scale_idle_timeout), so one set before the pressure keeps
//   its deadline.
//
// Dropping the idlest at the limit (wangle's dropIdleConnections)
//   With drop_idle_at_limit, a new connection that finds the server at
//   ServerOptions::max_connections closes the least recently reading
//   connection (reason `overload`) instead of being refused, if that one has
//   read nothing for at least `drop_idle_after` and has no request in flight
//   (Connection::begin_request). The candidates come from the oldest end of
//   the same activity order, checked against each connection's exact last
//   read; at most kDropProbe are looked at per newcomer, and when none
//   qualifies the newcomer is refused as before (reason `limit`). So no
//   connection that read within `drop_idle_after` is ever dropped.
//
// Threads: plain values and pure functions, any thread.
#pragma once

#include <heartwheel/net/idle_policy.h>
#include <heartwheel/common/time.h>

#include <cstddef>
#include <cstdint>

namespace heartwheel::net {

struct OverloadOptions {
  // Connection pressure: 0 at or below `start_connections`, 1 at or above
  // `saturation_connections` (open connections of one Server, i.e. one
  // worker loop). Both 0 = no connection pressure.
  std::size_t start_connections = 0;
  std::size_t saturation_connections = 0;
  // Memory pressure: the process's resident set size, sampled every
  // `memory_sample_interval`. Both 0 = no memory pressure.
  std::size_t memory_start_bytes = 0;
  std::size_t memory_saturation_bytes = 0;
  Duration memory_sample_interval = std::chrono::seconds(1);
  // The floor idle timeouts shrink to at saturation: `min_timeout` when
  // positive (a timeout already shorter stays as it is), else timeout x
  // `min_scale` (0..1; 1 = no scaling).
  double min_scale = 1.0;
  Duration min_timeout{0};

  // At max_connections, close the idlest connection to admit the new one
  // (see above). Needs ServerOptions::max_connections.
  bool drop_idle_at_limit = false;
  // A connection must have read nothing for this long to be dropped.
  Duration drop_idle_after = std::chrono::seconds(5);

  // How coarse the activity order is: a reading connection moves to the
  // front at most once per granularity (rounded down to a power of two
  // nanoseconds, at least 1 ms), and the sweeper steps at most once per
  // granularity. Smaller: a finer order, more moves. 0 (the default): 1 s,
  // or an eighth of the shortest read-side idle timeout at saturation when
  // that is shorter, so that the sweeper re-arms only connections silent for
  // about 3/4 of their scaled timeout (activity_granularity_for()).
  Duration activity_granularity{0};

  // True when idle timeouts scale (some pressure source and a floor below 1).
  bool scaling() const noexcept;
  // True when the server keeps its connections in activity order.
  bool tracks_activity() const noexcept { return scaling() || drop_idle_at_limit; }
  // Throws std::invalid_argument naming the field: start >= saturation,
  // min_scale outside 0..1, min_scale and min_timeout both set, a negative
  // duration, a zero sample interval with memory pressure, a granularity
  // below 1 ms (other than 0).
  void validate() const;
};

// Pressure is kept in steps of 1/kPressureSteps.
inline constexpr std::uint32_t kPressureSteps = 256;
// Candidates looked at per newcomer when dropping the idlest.
inline constexpr std::size_t kDropProbe = 16;

// Pressure of `value` between `start` and `saturation`, in steps
// (0..kPressureSteps, rounded down); 0 when saturation <= start.
std::uint32_t pressure_steps(std::size_t value, std::size_t start, std::size_t saturation) noexcept;

// `timeout` at pressure `steps` (see the formula above). 0 stays 0 (off).
Duration scaled_timeout(Duration timeout, std::uint32_t steps, const OverloadOptions& o) noexcept;

// `base` with its idle timeouts scaled (max_age, jitter and refresh kept).
IdlePolicy scaled_policy(const IdlePolicy& base, std::uint32_t steps,
                         const OverloadOptions& o) noexcept;

// log2 of the activity granularity in nanoseconds (see activity_granularity).
unsigned activity_shift(Duration granularity) noexcept;

// The granularity a server with idle policy `base` uses (see
// activity_granularity).
Duration activity_granularity_for(const OverloadOptions& o, const IdlePolicy& base) noexcept;

}  // namespace heartwheel::net
