// libuv driver for the timing wheel: see heartwheel/loop_wheel.h for why the
// expiry runs in the check phase and the timer is re-armed in prepare.
#include <heartwheel/loop_wheel.h>

#include <heartwheel/error.h>

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
    : loop_(loop), options_(options), wheel_(options.tick, from_uv_millis(uv_now(loop))) {
  if (options.tick < std::chrono::milliseconds(1))
    throw std::invalid_argument("LoopWheel: tick must be at least 1ms (libuv timers count milliseconds)");
  if (options.max_fired_per_iteration == 0)
    throw std::invalid_argument("LoopWheel: max_fired_per_iteration must be positive");
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
  const TimePoint t = now();
  const auto next = wheel_.next_deadline();
  if (!next || *next > t) return 0;
  const std::size_t fired = wheel_.advance(t, options_.max_fired_per_iteration);
  if (wheel_.ready() > 0) ++budget_exhausted_;
  return fired;
}

void LoopWheel::on_prepare(uv_prepare_t* h) {
  auto* block = static_cast<Handles*>(h->data);
  if (block->owner) block->owner->rearm();
}

void LoopWheel::on_check(uv_check_t* h) {
  auto* block = static_cast<Handles*>(h->data);
  if (block->owner) block->owner->run_due();
}

void LoopWheel::on_timer(uv_timer_t* h) {
  // The wake-up is all the timer is for; the check phase of this iteration
  // expires entries after I/O has been polled.
  auto* block = static_cast<Handles*>(h->data);
  if (block->owner) block->owner->timer_armed_ = false;
}

}  // namespace heartwheel
