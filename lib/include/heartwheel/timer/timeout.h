// heartwheel/timer/timeout.h - the handle of one task scheduled on a HashedWheelTimer.
//
// What it is
//   A Timeout is created by HashedWheelTimer::new_timeout() / new_periodic()
//   and handed out as std::shared_ptr<Timeout>. It is at the same time the
//   wheel's intrusive entry and the node of the submission and cancellation
//   queues, so scheduling costs one allocation (the shared_ptr block) and no
//   other. Dropping the handle does NOT cancel: the timer keeps its own
//   reference until the task has run, was cancelled, or stop() hands it back.
//
// States (one atomic byte, changed by compare-and-swap as in Netty)
//   init --cancel()--> cancelled
//   init --deadline--> expired      (one-shot: just before the task runs)
//   A periodic timeout stays in `init` between runs; cancel() ends the series.
//   Timeouts returned by HashedWheelTimer::stop() stay in `init`.
//
// Threads
//   Every member function: any thread, also from inside a task (including the
//   task of this very timeout). Only the timer's worker thread ever touches
//   the wheel; cancel() from elsewhere posts the timeout to a cancel queue.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include <heartwheel/common/detail/mpsc_queue.h>
#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_entry.h>

namespace heartwheel {

class HashedWheelTimer;
class Timeout;

namespace detail {
class TimerCore;
// One Timeout sits in the submission queue and, once cancelled, in the cancel
// queue, possibly both at once: one hook each.
struct SubmitHook : MpscNode {};
struct CancelHook : MpscNode {};
}  // namespace detail

class Timeout final : public std::enable_shared_from_this<Timeout>,
                      private TimerEntry,
                      private detail::SubmitHook,
                      private detail::CancelHook {
 public:
  // The task receives its own Timeout, so it can read its state, cancel a
  // periodic series or reach timer() to schedule a follow-up.
  using Task = std::function<void(Timeout&)>;

  // Cancels the task. Returns true if this call moved the timeout from `init`
  // to `cancelled`: a one-shot task then never runs, a periodic series runs no
  // more (a run already in progress, or already handed to the executor,
  // completes). Returns false if the task already ran (expired) or the
  // timeout was already cancelled. A successful cancel frees the timeout's
  // place under max_pending at once; the wheel memory is released by the
  // worker at its next wake-up. Never throws.
  bool cancel() noexcept;

  bool is_cancelled() const noexcept { return state_.load(std::memory_order_acquire) == kCancelled; }
  // True once a one-shot task has started (or been handed to the executor).
  // Always false for a periodic timeout.
  bool is_expired() const noexcept { return state_.load(std::memory_order_acquire) == kExpired; }

  // The timer that created this timeout. Valid while that HashedWheelTimer
  // object lives, which is always the case inside the task unless the task
  // outlives the timer on a user executor.
  HashedWheelTimer& timer() const noexcept;

  // The task, as given to new_timeout().
  const Task& task() const noexcept { return task_; }

  // Zero for a one-shot timeout; the period of a new_periodic() series.
  Duration period() const noexcept { return period_; }

  // For std::make_shared inside the timer only (the key cannot be made elsewhere).
  class Key {
    friend class detail::TimerCore;
    Key() = default;
  };
  Timeout(Key, std::shared_ptr<detail::TimerCore> core, Task task, TimePoint deadline,
          Duration period) noexcept;
  ~Timeout() = default;
  Timeout(const Timeout&) = delete;
  Timeout& operator=(const Timeout&) = delete;

 private:
  friend class detail::TimerCore;

  static constexpr std::uint8_t kInit = 0;
  static constexpr std::uint8_t kCancelled = 1;
  static constexpr std::uint8_t kExpired = 2;

  std::atomic<std::uint8_t> state_{kInit};
  TimePoint deadline_;  // the next run; written by the submitter, then by the worker only
  Duration period_;
  Task task_;
  std::shared_ptr<detail::TimerCore> core_;  // keeps the queues alive for cancel()
  // The timer's own references, so a fire-and-forget timeout outlives its
  // handle: self_ while it is queued or in the wheel, cancel_self_ while it
  // sits in the cancel queue. Only the worker resets them.
  std::shared_ptr<Timeout> self_;
  std::shared_ptr<Timeout> cancel_self_;
  // The worker's list of timeouts in the wheel, for stop() and expire-all
  // (the wheel core has no iteration on purpose).
  Timeout* registry_prev_ = nullptr;
  Timeout* registry_next_ = nullptr;
};

}  // namespace heartwheel
