// timer_runner.h - runs each measured operation on one timer store.
//
// Every operation moves a virtual clock 1 ms per batch of `batch` operations
// (default 1000, i.e. 1M operations per virtual second), so deadlines really
// move between refreshes and the wheel's cascades happen on the way, as in a
// loop. The per-millisecond driver call (wheel.advance / uv_update_time / heap
// expiry check) is inside the timed region. Results are ns per operation over
// at least `min_ops` operations (several rounds for small N).
//
// The timed loops do no division: a 64-bit DIV takes longer on this
// machine than the operations measured, and one per operation (`i % batch`,
// `k % n`) bounded every row from below and hid differences between stores
// (docs/bench-history/timer-core.md, "The last deadline's slot").
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_clock.h"
#include "timer_impls.h"

namespace heartwheel::bench {

struct RunConfig {
  std::uint64_t timeout_ns = 30'000'000'000;  // the idle timeout every refresh re-arms
  std::uint64_t window_ns = 1'000'000'000;    // expiry: deadlines spread over this window
  std::size_t batch = 1000;                   // operations per virtual millisecond
  std::size_t min_ops = 2'000'000;
  std::size_t refresh_segments = 8;           // phases sampled per refresh measurement
};

struct OpResult {
  std::string op;
  std::string order;  // "seq", "random" or "random_owner_hot"
  double ns_per_op = 0;
  double relink_fraction = -1;  // wheel only: schedules that left their slot
};

template <class Impl>
class TimerRunner {
 public:
  TimerRunner(Impl& impl, std::size_t n, const RunConfig& cfg, const std::vector<std::uint32_t>& perm,
              std::uint64_t start_ns)
      : impl_(impl), n_(n), cfg_(cfg), perm_(perm), now_(start_ns) {}

  // Arms N disarmed entries at now + timeout, in index order.
  OpResult schedule() {
    double total = 0;
    const std::size_t rounds = rounds_for(n_);
    for (std::size_t r = 0; r < rounds; ++r) {
      Stopwatch sw;
      arm_all();
      total += static_cast<double>(sw.elapsed_ns());
      cancel_all();
    }
    return {"schedule", "seq", total / static_cast<double>(rounds * n_)};
  }

  // Disarms N armed entries in random order.
  OpResult cancel() {
    double total = 0;
    const std::size_t rounds = rounds_for(n_);
    for (std::size_t r = 0; r < rounds; ++r) {
      arm_all();
      Stopwatch sw;
      for (std::size_t k = 0; k < n_; ++k) impl_.cancel(perm_[k]);
      total += static_cast<double>(sw.elapsed_ns());
    }
    return {"cancel", "random", total / static_cast<double>(rounds * n_)};
  }

  // Moves armed entries to now + timeout. order: "seq" (index order),
  // "random" (pre-shuffled), "random_owner_hot" (pre-shuffled, but each batch's
  // entries are touched, untimed, just before: in a server the I/O handler has
  // just read the connection that holds the entry, so it is in cache).
  //
  // Whether a refresh stays in its wheel slot (the fast path) or relinks
  // depends on where slot boundaries fall relative to the deadlines, i.e. on
  // the phase of the clock. So the operations are split into kSegments
  // segments, each starting at a seeded random phase over a level-3 slot
  // (2^18 ticks), with all N entries freshly armed (untimed) just before: the
  // result averages over phases instead of depending on one alignment.
  OpResult refresh(const std::string& order) {
    const std::size_t kSegments = cfg_.refresh_segments;
    const bool random = order != "seq";
    const bool hot = order == "random_owner_hot";
    const std::size_t ops = n_ < cfg_.min_ops ? cfg_.min_ops : n_;
    const auto stats_before = wheel_stats();
    double total = 0;
    std::size_t k = 0;
    for (std::size_t seg = 0; seg < kSegments; ++seg) {
      now_ += (phase_rng_() % (1u << 18)) * 1'000'000;
      impl_.set_now(now_);
      arm_all();
      const std::size_t seg_end = ops * (seg + 1) / kSegments;
      while (k < seg_end) {
        const std::size_t end = k + cfg_.batch < seg_end ? k + cfg_.batch : seg_end;
        const std::size_t first = k % n_;  // the batch's first index: one division per batch
        if (hot)
          for (std::size_t j = k, at = first; j < end; ++j, at = next(at))
            touch(impl_.entry_address(random ? perm_[at] : at));
        Stopwatch sw;
        step();
        const std::uint64_t deadline = now_ + cfg_.timeout_ns;
        for (std::size_t j = k, at = first; j < end; ++j, at = next(at))
          impl_.schedule(random ? perm_[at] : at, deadline);
        total += static_cast<double>(sw.elapsed_ns());
        k = end;
      }
      cancel_all();
    }
    OpResult result{"refresh", order, total / static_cast<double>(ops)};
    if constexpr (std::is_same_v<Impl, WheelImpl>) {
      // The arming above counts as schedules too; count refreshes only.
      const auto& after = impl_.wheel().stats();
      const double scheduled = static_cast<double>(after.scheduled - stats_before.scheduled - kSegments * n_);
      result.relink_fraction = static_cast<double>(after.relinked - stats_before.relinked) / scheduled;
    }
    return result;
  }

  // Fires N entries whose deadlines are spread over `window` about `timeout`
  // from now (so on the wheel they cascade down the levels as in a server).
  // Time then moves as a loop drives it: one call up to the window, then one
  // call per 1 ms step through it; all calls are timed.
  OpResult expire() {
    double total = 0;
    const std::size_t rounds = rounds_for(n_);
    for (std::size_t r = 0; r < rounds; ++r) {
      for (std::size_t i = 0; i < n_; ++i) impl_.schedule(i, now_ + cfg_.timeout_ns + jitter(i));
      const std::uint64_t before = g_fired;
      const std::uint64_t first = now_ + cfg_.timeout_ns;
      now_ = first + cfg_.window_ns;
      Stopwatch sw;
      for (std::uint64_t t = first; t <= now_; t += 1'000'000) impl_.expire(t);
      total += static_cast<double>(sw.elapsed_ns());
      if (g_fired - before != n_)
        throw std::logic_error(std::string(Impl::kName) + ": expiry fired " + std::to_string(g_fired - before) +
                               " of " + std::to_string(n_) + " entries");
    }
    return {"expire", "deadline", total / static_cast<double>(rounds * n_)};
  }

  std::uint64_t now() const { return now_; }

 private:
  std::size_t rounds_for(std::size_t n) const { return n >= cfg_.min_ops ? 1 : (cfg_.min_ops + n - 1) / n; }
  std::size_t next(std::size_t at) const { return at + 1 == n_ ? 0 : at + 1; }  // (at + 1) % n
  void step() {
    now_ += 1'000'000;
    impl_.set_now(now_);
  }
  // Arms N entries in index order, the clock stepping once per batch (the
  // schedule row times exactly this).
  void arm_all() {
    for (std::size_t i = 0, left = 0; i < n_; ++i, --left) {
      if (left == 0) {
        step();
        left = cfg_.batch;
      }
      impl_.schedule(i, now_ + cfg_.timeout_ns);
    }
  }
  void cancel_all() {
    for (std::size_t i = 0; i < n_; ++i) impl_.cancel(i);
  }
  std::uint64_t jitter(std::size_t i) const {
    std::uint64_t x = i + 0x9E3779B97F4A7C15ull;  // splitmix64: a fixed, even spread
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return (x ^ (x >> 31)) % cfg_.window_ns;
  }
  WheelStats wheel_stats() const {
    if constexpr (std::is_same_v<Impl, WheelImpl>) return impl_.wheel().stats();
    else return {};
  }
  void touch(const void* p) {
    const auto* bytes = static_cast<const volatile unsigned char*>(p);
    for (std::size_t off = 0; off < Impl::entry_size(); off += 64) sink_ += bytes[off];
    sink_ += bytes[Impl::entry_size() - 1];  // the last line of an unaligned entry
  }

  Impl& impl_;
  std::size_t n_;
  RunConfig cfg_;
  const std::vector<std::uint32_t>& perm_;
  std::uint64_t now_;
  unsigned sink_ = 0;
  std::minstd_rand phase_rng_{12345};
};

}  // namespace heartwheel::bench
