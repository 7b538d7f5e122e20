// heartwheel/net/pool_health.h - the health of one endpoint of a net::Pool
// (pool.h): outlier ejection and re-admission, as plain state and arithmetic.
//
// What it is
//   An endpoint is one server a pool holds connections to. Its state:
//
//     warming --first connection open--> healthy
//     healthy --consecutive failures, or a heartbeat timeout--> ejected
//     ejected --ejection time over--> probing
//     probing --probe answered--> healthy       (re-admitted)
//     probing --probe unanswered or failed--> ejected (for longer)
//     any --removed from the pool's list--> draining (then gone)
//
//   The rules are Envoy's outlier detection and Finagle's failure accrual:
//   - `consecutive_failures` calls in a row that failed or timed out (a
//     success in between starts the count again) eject the endpoint; so
//     does a heartbeat timeout (a connection found dead by its missed
//     pongs), when `eject_on_heartbeat_timeout`.
//   - An ejection lasts base_ejection_time x the number of times the
//     endpoint was ejected, capped at max_ejection_time; the multiplier
//     goes down by one for every base_ejection_time the endpoint then stays
//     healthy (counted lazily, at its next ejection), so an endpoint that
//     fails once a day is not punished for last week.
//   - At most max_ejection_percent of the pool's endpoints are ejected (or
//     probing) at once, at least one may be, and never the last one in use:
//     a pool does not eject itself empty (the fault may be on its own side,
//     and with nowhere else to send a call, ejecting only refuses it). So a
//     pool of one endpoint never ejects it. An ejection the cap refuses is
//     counted (ejections_skipped) and the endpoint stays in use.
//   - Probing: the pool pings one of the endpoint's connections (the
//     protocol's ping, PoolOptions::ping) and waits `probe_timeout` for any
//     byte from it; without a ping it lets one call through (a trial, the
//     circuit breaker's half-open state) and that call's outcome decides.
//
// EndpointHealth keeps one endpoint's counters and state and does the
// arithmetic; the pool (pool.h) owns the timers and the cap. Tested on
// virtual time in tests/unit/pool_health_test.cpp.
// Threads: plain values, the owner's thread.
#pragma once

#include <heartwheel/common/time.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace heartwheel::net {

enum class EndpointState : std::uint8_t {
  warming,   // no connection has opened yet: not picked
  healthy,   // picked
  ejected,   // not picked until its ejection time is over
  probing,   // ejection over: a probe decides (a trial call may be picked)
  draining,  // removed from the list: its calls finish, then it closes
};

// "warming", "healthy", "ejected", "probing", "draining": the JSON spelling.
const char* to_string(EndpointState state) noexcept;

struct OutlierOptions {
  // Failed or timed-out calls in a row that eject an endpoint; 0 = never
  // for failures.
  unsigned consecutive_failures = 5;
  // A connection closed by its heartbeat (no answer to pings for the
  // heartbeat's timeout) ejects its endpoint at once.
  bool eject_on_heartbeat_timeout = true;
  Duration base_ejection_time = std::chrono::seconds(2);
  Duration max_ejection_time = std::chrono::seconds(60);
  // The largest share of the pool's endpoints ejected or probing at once
  // (0-100); one may always be, but never the last one in use.
  unsigned max_ejection_percent = 50;
  // How long a probe ping may go unanswered before the endpoint is ejected
  // again.
  Duration probe_timeout = std::chrono::seconds(1);

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
  // base x ejections, at most max_ejection_time (ejections >= 1).
  Duration ejection_time(unsigned ejections) const noexcept;
  // How many of `endpoints` may be ejected at once: max(1, endpoints x
  // percent / 100), and never more than endpoints - 1.
  std::size_t ejection_cap(std::size_t endpoints) const noexcept;
};

class EndpointHealth {
 public:
  EndpointState state() const noexcept { return state_; }
  // Failures (or timeouts) since the last success.
  unsigned consecutive_failures() const noexcept { return consecutive_; }
  // The multiplier of the next ejection time, before its decay.
  unsigned ejection_count() const noexcept { return ejections_; }
  // When the current ejection ends (meaningful while ejected).
  TimePoint ejected_until() const noexcept { return until_; }
  // True while the endpoint may be picked (healthy, or probing with no
  // trial call out when `trial_calls` is set).
  bool pickable(bool trial_calls) const noexcept {
    return state_ == EndpointState::healthy ||
           (trial_calls && state_ == EndpointState::probing && !trial_out_);
  }
  bool counts_as_ejected() const noexcept {
    return state_ == EndpointState::ejected || state_ == EndpointState::probing;
  }

  // warming -> healthy (a first connection opened). No-op otherwise.
  void warmed() noexcept {
    if (state_ == EndpointState::warming) state_ = EndpointState::healthy;
  }
  // A call succeeded: the failure count starts again.
  void note_success() noexcept { consecutive_ = 0; }
  // A call failed or timed out. True when the endpoint is healthy and has
  // now reached `consecutive_failures` (the owner ejects it if the cap
  // allows).
  bool note_failure(const OutlierOptions& o) noexcept {
    ++consecutive_;
    return state_ == EndpointState::healthy && o.consecutive_failures > 0 &&
           consecutive_ >= o.consecutive_failures;
  }
  // -> ejected until now + ejection_time(the decayed multiplier + 1).
  // Returns that time.
  TimePoint eject(TimePoint now, const OutlierOptions& o) noexcept;
  // ejected -> probing (the ejection time is over).
  void start_probe() noexcept {
    state_ = EndpointState::probing;
    trial_out_ = false;
  }
  // A trial call was picked while probing.
  void trial_started() noexcept { trial_out_ = true; }
  bool trial_out() const noexcept { return trial_out_; }
  // probing -> healthy: the probe was answered.
  void readmit(TimePoint now) noexcept;
  // -> draining (removed from the pool). Final.
  void drain() noexcept { state_ = EndpointState::draining; }

 private:
  TimePoint until_{};
  TimePoint healthy_since_ = kNever;  // last re-admission (kNever: none since the last ejection)
  unsigned consecutive_ = 0;
  unsigned ejections_ = 0;
  EndpointState state_ = EndpointState::warming;
  bool trial_out_ = false;
};

}  // namespace heartwheel::net
