// libuv driver for the timing wheel: see heartwheel/timer/loop_wheel.h for why the
// expiry runs in the check phase and the timer is re-armed in prepare.
#include <heartwheel/common/error.h>
#include <heartwheel/timer/loop_wheel.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace heartwheel {

struct LoopWheel::Handles {
  uv_timer_t timer;
  uv_prepare_t prepare;
  uv_check_t check;
  LoopWheel* owner;
  int open = 0;  // handles not yet closed; the block is freed at zero
};

LoopWheel::LoopWheel(uv_loop_t* loop, Options options)
    : TimerService(clock_),
      loop_(loop),
      clock_(loop),
      options_(options),
      wheel_(options.tick, clock_.loop_time()) {
  if (options.tick < std::chrono::milliseconds(1))
    throw std::invalid_argument(
        "LoopWheel: tick must be at least 1ms (libuv timers count milliseconds)");
  if (options.max_fired_per_iteration == 0)
    throw std::invalid_argument("LoopWheel: max_fired_per_iteration must be positive");
  if (options.stall_threshold.count() <= 0)
    throw std::invalid_argument("LoopWheel: stall_threshold must be positive");
  handles_ = new Handles{};
  handles_->owner = this;
  check_uv(uv_timer_init(loop, &handles_->timer), "uv_timer_init");
  ++handles_->open;
  check_uv(uv_prepare_init(loop, &handles_->prepare), "uv_prepare_init");
  ++handles_->open;
  check_uv(uv_check_init(loop, &handles_->check), "uv_check_init");
  ++handles_->open;
  handles_->timer.data = handles_->prepare.data = handles_->check.data = handles_;
  // prepare and check run every iteration but must not keep the loop alive;
  // the timer does, while entries are armed (like any uv_timer_t).
  uv_prepare_start(&handles_->prepare, on_prepare);
  uv_check_start(&handles_->check, on_check);
  uv_unref(reinterpret_cast<uv_handle_t*>(&handles_->prepare));
  uv_unref(reinterpret_cast<uv_handle_t*>(&handles_->check));
}

LoopWheel::~LoopWheel() {
  handles_->owner = nullptr;
  auto on_close = [](uv_handle_t* h) {
    auto* block = static_cast<Handles*>(h->data);
    if (--block->open == 0) delete block;
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&handles_->timer), on_close);
  uv_close(reinterpret_cast<uv_handle_t*>(&handles_->prepare), on_close);
  uv_close(reinterpret_cast<uv_handle_t*>(&handles_->check), on_close);
}

void LoopWheel::wake_at(TimePoint deadline) {
  const std::uint64_t now_ms = uv_now(loop_);
  const std::uint64_t delay = to_uv_millis_ceil(deadline - from_uv_millis(now_ms));
  const std::uint64_t target = now_ms + delay;
  if (timer_armed_ && target == armed_for_ms_) return;
  uv_timer_start(&handles_->timer, on_timer, delay, 0);
  timer_armed_ = true;
  armed_for_ms_ = target;
}

void LoopWheel::rearm() {
  const auto next = wheel_.next_deadline();
  if (!next) {
    if (timer_armed_) uv_timer_stop(&handles_->timer);
    timer_armed_ = false;
    return;
  }
  wake_at(*next);
}

std::size_t LoopWheel::run_due() {
  // The poll's return time, not now(): bytes that arrived since (during a
  // stall in this iteration's callbacks) are read by the next poll before
  // anything is judged against a later time.
  const TimePoint t = clock_.loop_time();
  const auto next = wheel_.next_deadline();
  if (!next || *next > t) return 0;
  const std::size_t fired = wheel_.advance(t, options_.max_fired_per_iteration);
  if (wheel_.ready() > 0) ++stats_.budget_exhausted;
  return fired;
}

bool LoopWheel::check_for_stall() noexcept {
  // Two ways a loop loses time, both measured here before anything expires:
  //  - the poll overran: it returned later than the wake-up we armed it for
  //    (SIGSTOP, a VM freeze or swapping during epoll_wait). libuv then may
  //    return from the poll WITHOUT collecting events (EINTR once its timeout
  //    has run out), so bytes that arrived meanwhile are still unread;
  //  - the callbacks of this iteration took long (a slow handler, a freeze
  //    outside the poll): before the poll (timers, idle handles: measured in
  //    prepare) and after it (I/O callbacks: real time minus the poll's
  //    return time).
  const std::uint64_t poll_returned_ms = uv_now(loop_);
  const std::uint64_t real_ns = uv_hrtime();
  const std::uint64_t returned_ns = poll_returned_ms * 1'000'000;
  const Duration callbacks{real_ns > returned_ns ? static_cast<Duration::rep>(real_ns - returned_ns)
                                                 : 0};
  Duration overrun{0};
  if (poll_budget_ms_ != kUnbounded) {
    const std::uint64_t expected_ms = poll_started_ms_ + poll_budget_ms_;
    if (poll_returned_ms > expected_ms)
      overrun = std::chrono::milliseconds(poll_returned_ms - expected_ms);
  }
  const Duration lag = before_poll_ + callbacks + overrun;
  ++stats_.iterations;
  stats_.lag_total += lag;
  const auto ms =
      static_cast<std::uint64_t>(std::chrono::ceil<std::chrono::milliseconds>(lag).count());
  // Bucket i holds lags in (2^(i-1), 2^i] ms; 0 and 1 ms both go to bucket 0.
  const std::size_t bucket =
      ms <= 1 ? 0 : std::min<std::size_t>(std::bit_width(ms - 1), kLagBuckets - 1);
  ++stats_.lag_buckets[bucket];
  if (lag >= options_.stall_threshold) {
    ++stats_.stalls;
    stats_.stall_total += lag;
    stats_.stall_max = std::max(stats_.stall_max, lag);
  }
  // After an overrun, poll once more (the next prepare arms the timer for the
  // entries now due, so that poll does not block) before expiring anything.
  // Bounded, so a loop that keeps stalling still expires.
  if (overrun >= options_.stall_threshold && skipped_in_row_ < kMaxSkips) {
    ++skipped_in_row_;
    ++stats_.expiries_deferred;
    return true;
  }
  skipped_in_row_ = 0;
  return false;
}

void LoopWheel::on_prepare(uv_prepare_t* h) {
  auto* block = static_cast<Handles*>(h->data);
  LoopWheel* self = block->owner;
  if (!self) return;
  self->rearm();
  // Time spent in this iteration's callbacks so far (uv_now() was cached at
  // the iteration's start).
  const std::uint64_t real_ns = uv_hrtime();
  const std::uint64_t start_ns = uv_now(self->loop_) * 1'000'000;
  self->before_poll_ =
      Duration{real_ns > start_ns ? static_cast<Duration::rep>(real_ns - start_ns) : 0};
  // How long the coming poll may block because of us: until our timer. (Other
  // handles may wake it sooner; never later, unless the loop lost time.)
  self->poll_started_ms_ = uv_now(self->loop_);
  self->poll_budget_ms_ = self->timer_armed_ && self->armed_for_ms_ >= self->poll_started_ms_
                              ? self->armed_for_ms_ - self->poll_started_ms_
                              : kUnbounded;
}

void LoopWheel::on_check(uv_check_t* h) {
  auto* block = static_cast<Handles*>(h->data);
  LoopWheel* self = block->owner;
  if (!self) return;
  if (self->check_for_stall()) return;
  self->run_due();
}

void LoopWheel::on_timer(uv_timer_t* h) {
  // The wake-up is all the timer is for; the check phase of this iteration
  // expires entries after I/O has been polled.
  auto* block = static_cast<Handles*>(h->data);
  if (block->owner) block->owner->timer_armed_ = false;
}

}  // namespace heartwheel
