// --auto-reconnect: a connection the server closed (or whose connect failed)
// waits a jittered exponential backoff in its own TimerEntry (state backoff)
// and connects again. The counts per second feed the reconnect-storm report
// (reconnect.h, docs/BENCHMARKS.md "reconnect storm"). ws mode's comeback
// after a server restart (close 1012, ws_session.cpp) retries the same way.
#include "worker.h"
#include "ws_state.h"

namespace heartwheel::load {

void Worker::attempt_started(Conn& c) {
  if (!options_.reconnect.enabled || (!c.was_open && c.failures == 0)) return;
  auto& r = result_.reconnect;
  ++r.attempts;
  ReconnectStats::count(r.attempts_per_s, elapsed_ms() / 1000);
}

void Worker::attempt_failed(Conn& c, const char* error) {
  // A comeback after a server restart (ws mode, close 1012: restart_ns set
  // until it is back) keeps trying as --auto-reconnect does: a client told
  // to come back does not give up at one timed-out connect.
  const bool comeback = c.ws != nullptr && c.ws->restart_ns != 0;
  if ((!options_.reconnect.enabled && !comeback) || stopping_) return;
  if (c.was_open || c.failures > 0) {  // a retry failed (first attempts count in connect_errors)
    auto& r = result_.reconnect;
    ++r.failures;
    ++r.errors[error];
    ReconnectStats::count(r.failures_per_s, elapsed_ms() / 1000);
  }
  if (c.failures < 255) ++c.failures;
  c.retry = true;
}

void Worker::connection_lost(Conn& c) {
  if (!options_.reconnect.enabled || stopping_) return;
  auto& r = result_.reconnect;
  const std::uint64_t now_ms = elapsed_ms();
  ++r.losses;
  ReconnectStats::count(r.losses_per_s, now_ms / 1000);
  if (r.first_loss_ms == 0) r.first_loss_ms = std::max<std::uint64_t>(1, now_ms);
  r.max_down = std::max(r.max_down, ++down_);
  const auto stable_ms = static_cast<std::uint64_t>(options_.reconnect.stable.count() / 1'000'000);
  if (now_ms - c.opened_ms < stable_ms) {
    // Closed right after it opened (a server at its limit): one more failure.
    ++r.short_lived;
    if (c.failures < 255) ++c.failures;
  } else {
    c.failures = 0;  // the first wait after a close is the initial delay
  }
  c.retry = true;
}

void Worker::opened_again(Conn& c) {
  const bool lost_before = c.was_open;
  c.was_open = true;
  c.opened_ms = static_cast<std::uint32_t>(elapsed_ms());
  // failures stays: connection_lost() resets it once the connection proved stable.
  c.retry = false;
  c.silent = c.awaiting = false;  // a fresh session on the new socket
  c.rx_pos = c.rx_len = 0;
  c.rx_type = 0;
  if (!options_.reconnect.enabled || !lost_before) return;
  auto& r = result_.reconnect;
  ++r.reconnects;
  const std::uint64_t now_ms = elapsed_ms();
  ReconnectStats::count(r.reconnects_per_s, now_ms / 1000);
  if (down_ > 0 && --down_ == 0) r.all_back_ms = now_ms;
}

void Worker::retry_later(Conn& c) {
  if (!c.retry || stopping_ || !wheel_) return;
  c.retry = false;
  c.state = Conn::State::backoff;
  wheel_->schedule(c, options_.reconnect.delay(std::max(1, int{c.failures}), jitter_rng_));
}

}  // namespace heartwheel::load
