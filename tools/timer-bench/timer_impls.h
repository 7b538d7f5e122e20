// timer_impls.h - the three timer stores the benchmark drives, behind one
// shape so that every operation runs the same loop for each:
//   set_now(ns)            the loop's time moves (wheel.advance, uv_update_time)
//   schedule(i, deadline)  arm or move entry i (refresh is a schedule of an armed entry)
//   cancel(i)
//   expire(ns)             set the time and run every due callback; returns how many ran
//   entry_address(i), entry_size()   what the owner holds, for the "owner is hot" pass
//   bytes_per_entry()      entry + the structure's own memory, per live entry
// Time is virtual, in nanoseconds; see bench_clock.h for how libuv sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include <uv.h>

#include <heartwheel/timer/timing_wheel.h>

#include "bench_clock.h"
#include "dary_heap.h"

namespace heartwheel::bench {

inline std::uint64_t g_fired = 0;  // every callback below counts here

class WheelImpl {
 public:
  static constexpr const char* kName = "wheel";
  WheelImpl(std::size_t n, Duration tick, std::uint64_t start_ns)
      : wheel_(tick, TimePoint{}), entries_(std::make_unique<Entry[]>(n)), n_(n) {
    wheel_.advance(to_tp(start_ns));
  }
  ~WheelImpl() {
    for (std::size_t i = 0; i < n_; ++i) wheel_.cancel(entries_[i]);
  }
  void set_now(std::uint64_t ns) { wheel_.advance(to_tp(ns)); }
  void schedule(std::size_t i, std::uint64_t deadline) noexcept { wheel_.schedule_at(entries_[i], to_tp(deadline)); }
  void cancel(std::size_t i) noexcept { wheel_.cancel(entries_[i]); }
  std::size_t expire(std::uint64_t ns) { return wheel_.advance(to_tp(ns)); }
  const void* entry_address(std::size_t i) const noexcept { return &entries_[i]; }
  static constexpr std::size_t entry_size() { return sizeof(TimerEntry); }
  double bytes_per_entry() const { return sizeof(TimerEntry) + double(sizeof(TimingWheel)) / double(n_); }
  const TimingWheel& wheel() const { return wheel_; }

 private:
  struct Entry : TimerEntry {
    Entry() : TimerEntry([](TimerEntry&) { ++g_fired; }) {}
  };
  static TimePoint to_tp(std::uint64_t ns) { return TimePoint(Duration(static_cast<Duration::rep>(ns))); }
  TimingWheel wheel_;
  std::unique_ptr<Entry[]> entries_;
  std::size_t n_;
};

class HeapImpl {
 public:
  static constexpr const char* kName = "heap4";
  HeapImpl(std::size_t n, Duration /*tick*/, std::uint64_t start_ns)
      : timers_(std::make_unique<HeapTimer[]>(n)), n_(n), now_(start_ns) {
    heap_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) timers_[i].callback = [](HeapTimer&) { ++g_fired; };
  }
  void set_now(std::uint64_t ns) { now_ = ns; heap_.expire(ns); }
  void schedule(std::size_t i, std::uint64_t deadline) { heap_.schedule(timers_[i], deadline); }
  void cancel(std::size_t i) noexcept { heap_.cancel(timers_[i]); }
  std::size_t expire(std::uint64_t ns) { now_ = ns; return heap_.expire(ns); }
  const void* entry_address(std::size_t i) const noexcept { return &timers_[i]; }
  static constexpr std::size_t entry_size() { return sizeof(HeapTimer); }
  double bytes_per_entry() const {
    return sizeof(HeapTimer) + double(heap_.capacity() * sizeof(DaryHeap::Node) + sizeof(DaryHeap)) / double(n_);
  }

 private:
  DaryHeap heap_;
  std::unique_ptr<HeapTimer[]> timers_;
  std::size_t n_;
  std::uint64_t now_;
};

// One uv_timer_t per entry on a private loop: what a libuv user writes today.
class UvImpl {
 public:
  static constexpr const char* kName = "uv_timer";
  UvImpl(std::size_t n, Duration /*tick*/, std::uint64_t start_ns)
      : timers_(std::make_unique<uv_timer_t[]>(n)), n_(n) {
    virtual_clock_set(start_ns);
    if (uv_loop_init(&loop_) != 0) throw std::runtime_error("uv_loop_init failed");
    if (!libuv_reads_virtual_clock(&loop_))
      throw std::runtime_error("libuv does not read the virtual clock (is libuv linked statically?)");
    for (std::size_t i = 0; i < n; ++i) uv_timer_init(&loop_, &timers_[i]);
  }
  ~UvImpl() {
    for (std::size_t i = 0; i < n_; ++i) uv_close(reinterpret_cast<uv_handle_t*>(&timers_[i]), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
    virtual_clock_disable();
  }
  UvImpl(const UvImpl&) = delete;
  UvImpl& operator=(const UvImpl&) = delete;

  void set_now(std::uint64_t ns) {
    virtual_clock_set(ns);
    uv_update_time(&loop_);
  }
  // libuv takes a relative timeout in whole ms from the loop's cached time;
  // rounding up keeps "never early", as LoopWheel does.
  void schedule(std::size_t i, std::uint64_t deadline) noexcept {
    const std::uint64_t now_ms = uv_now(&loop_);
    const std::uint64_t deadline_ms = (deadline + 999'999) / 1'000'000;
    uv_timer_start(&timers_[i], on_timer, deadline_ms > now_ms ? deadline_ms - now_ms : 0, 0);
  }
  void cancel(std::size_t i) noexcept { uv_timer_stop(&timers_[i]); }
  std::size_t expire(std::uint64_t ns) {
    const std::uint64_t before = g_fired;
    virtual_clock_set(ns);
    uv_run(&loop_, UV_RUN_NOWAIT);  // the real timer phase: heap min, stop, callback
    return g_fired - before;
  }
  const void* entry_address(std::size_t i) const noexcept { return &timers_[i]; }
  static constexpr std::size_t entry_size() { return sizeof(uv_timer_t); }
  double bytes_per_entry() const { return sizeof(uv_timer_t) + double(sizeof(uv_loop_t)) / double(n_); }

 private:
  static void on_timer(uv_timer_t*) { ++g_fired; }
  uv_loop_t loop_{};
  std::unique_ptr<uv_timer_t[]> timers_;
  std::size_t n_;
};

}  // namespace heartwheel::bench
