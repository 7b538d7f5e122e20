// trackers.h - the idle trackers the simulation compares. Each connection has
// three timers: read-idle, write-idle and request. Any idle expiry closes the
// connection (a dead peer); a request expiry times the request out.
//   NoTracker    the baseline: the same connection memory and the same
//                per-I/O application store, no timers at all. Its cost is
//                subtracted to get the cost of idle tracking alone.
//   WheelTracker<true>   lazy refresh: I/O stores a timestamp; the idle entry
//                fires at its old deadline, sees the activity and re-arms for
//                the remaining time (nginx, Netty IdleStateHandler).
//   WheelTracker<false>  eager reschedule: I/O calls schedule_at(now + idle)
//                (same-slot fast path or O(1) unlink/relink).
//   UvTracker    one uv_timer_t per timer on a real libuv loop; I/O calls
//                uv_timer_start (which stops and re-inserts into libuv's heap).
// Request timers are one-shot deadlines: every tracker arms them on begin and
// cancels them on end.
// Interface used by the simulation (sim.h): open, on_read, on_write,
// begin_request, end_request, run_timers(now), and counters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include <uv.h>

#include <heartwheel/common/error.h>
#include <heartwheel/timer/timing_wheel.h>

#include "bench_clock.h"
#include "checker.h"

namespace heartwheel::bench {

struct SimConfig {
  Duration read_idle = std::chrono::seconds(10);
  Duration write_idle = std::chrono::seconds(10);
  Duration request_timeout = std::chrono::seconds(5);
  Duration tick = std::chrono::milliseconds(10);
  TimePoint start = TimePoint(std::chrono::seconds(1000));
};

struct TrackerCounters {
  std::uint64_t timer_ops = 0;  // schedule / cancel / uv_timer_start / uv_timer_stop calls
  std::uint64_t fires = 0;      // callbacks run
  std::uint64_t rearms = 0;     // lazy: fires that found activity and re-armed
};

inline std::uint64_t to_ns(TimePoint t) { return static_cast<std::uint64_t>(t.time_since_epoch().count()); }

struct ReadTag {};
struct WriteTag {};
struct RequestTag {};

// The application's per-connection state the I/O path touches anyway
// (io_count stands for it) and the lazy timestamps.
struct ConnState {
  TimePoint last_read{}, last_write{};  // used by lazy refresh only
  std::uint64_t io_count = 0;
  std::uint64_t unused = 0;
};

// Two cache lines: [read entry | ConnState] and [write entry | request entry].
// A read (two thirds of the events) touches line 0 only, in every mode; a
// write touches line 0 and, if it reschedules, line 1.
struct alignas(64) WheelConn : TaggedTimerEntry<ReadTag>, ConnState, TaggedTimerEntry<WriteTag>,
                               TaggedTimerEntry<RequestTag> {
  WheelConn() : TaggedTimerEntry<ReadTag>(nullptr), TaggedTimerEntry<WriteTag>(nullptr), TaggedTimerEntry<RequestTag>(nullptr) {}
  TimerEntry& read() { return TaggedTimerEntry<ReadTag>::entry(); }
  TimerEntry& write() { return TaggedTimerEntry<WriteTag>::entry(); }
  TimerEntry& request() { return TaggedTimerEntry<RequestTag>::entry(); }
};
static_assert(sizeof(void*) != 8 || sizeof(WheelConn) == 128, "WheelConn should be two cache lines");

class NoTracker {
 public:
  static constexpr const char* kName = "none";
  static constexpr bool kTimersFirst = false;
  NoTracker(std::size_t n, const SimConfig&, Checker&) : conns_(std::make_unique<WheelConn[]>(n)) {}
  void open(std::size_t, TimePoint) {}
  void on_read(std::size_t c, TimePoint) { ++conns_[c].io_count; }
  void on_write(std::size_t c, TimePoint) { ++conns_[c].io_count; }
  void begin_request(std::size_t, TimePoint) {}
  void end_request(std::size_t) {}
  void run_timers(TimePoint) {}
  static double bytes_per_connection() { return 0; }
  const TrackerCounters& counters() const { return counters_; }

 private:
  std::unique_ptr<WheelConn[]> conns_;
  TrackerCounters counters_;
};

template <bool kLazy>
class WheelTracker {
 public:
  static constexpr const char* kName = kLazy ? "wheel_lazy" : "wheel_eager";
  static constexpr bool kTimersFirst = false;  // as LoopWheel: I/O first, expiry in the check phase

  WheelTracker(std::size_t n, const SimConfig& cfg, Checker& chk)
      : wheel_(cfg.tick, TimePoint{}), conns_(std::make_unique<WheelConn[]>(n)), n_(n), cfg_(cfg), chk_(chk) {
    self_ = this;
    wheel_.advance(cfg.start);
    for (std::size_t c = 0; c < n; ++c) {
      conns_[c].read().set_callback(&on_idle<ReadTag>);
      conns_[c].write().set_callback(&on_idle<WriteTag>);
      conns_[c].request().set_callback(&on_request_timeout);
    }
  }
  ~WheelTracker() {
    for (std::size_t c = 0; c < n_; ++c) cancel_all(conns_[c]);
  }
  WheelTracker(const WheelTracker&) = delete;
  WheelTracker& operator=(const WheelTracker&) = delete;

  void open(std::size_t c, TimePoint) {
    WheelConn& k = conns_[c];
    k.last_read = chk_[c].last_read;
    k.last_write = chk_[c].last_write;
    wheel_.schedule_at(k.read(), k.last_read + cfg_.read_idle);
    wheel_.schedule_at(k.write(), k.last_write + cfg_.write_idle);
  }
  void on_read(std::size_t c, TimePoint now) {
    WheelConn& k = conns_[c];
    ++k.io_count;
    if constexpr (kLazy) {
      k.last_read = now;
    } else {
      wheel_.schedule_at(k.read(), now + cfg_.read_idle);
      ++counters_.timer_ops;
    }
  }
  void on_write(std::size_t c, TimePoint now) {
    WheelConn& k = conns_[c];
    ++k.io_count;
    if constexpr (kLazy) {
      k.last_write = now;
    } else {
      wheel_.schedule_at(k.write(), now + cfg_.write_idle);
      ++counters_.timer_ops;
    }
  }
  void begin_request(std::size_t c, TimePoint now) {
    wheel_.schedule_at(conns_[c].request(), now + cfg_.request_timeout);
    ++counters_.timer_ops;
  }
  void end_request(std::size_t c) {
    wheel_.cancel(conns_[c].request());
    ++counters_.timer_ops;
  }
  void run_timers(TimePoint now) { wheel_.advance(now); }
  static double bytes_per_connection() { return 3 * sizeof(TimerEntry) + (kLazy ? 2 * sizeof(TimePoint) : 0); }
  const TrackerCounters& counters() const { return counters_; }
  const TimingWheel& wheel() const { return wheel_; }

 private:
  template <class Tag>
  static void on_idle(TimerEntry& e) {
    WheelTracker& s = *self_;
    auto& k = static_cast<WheelConn&>(static_cast<TaggedTimerEntry<Tag>&>(e));
    ++s.counters_.fires;
    if constexpr (kLazy) {
      const TimePoint due = std::is_same_v<Tag, ReadTag> ? k.last_read + s.cfg_.read_idle
                                                         : k.last_write + s.cfg_.write_idle;
      if (due > s.wheel_.now()) {  // activity since it was armed: wait for the rest
        s.wheel_.schedule_at(e, due);
        ++s.counters_.rearms;
        ++s.counters_.timer_ops;
        return;
      }
    }
    s.cancel_all(k);
    s.counters_.timer_ops += 3;
    s.chk_.on_close(static_cast<std::size_t>(&k - s.conns_.get()), s.wheel_.now());
  }
  static void on_request_timeout(TimerEntry& e) {
    WheelTracker& s = *self_;
    auto& k = static_cast<WheelConn&>(static_cast<TaggedTimerEntry<RequestTag>&>(e));
    ++s.counters_.fires;
    s.chk_.on_request_timeout(static_cast<std::size_t>(&k - s.conns_.get()), s.wheel_.now());
  }
  void cancel_all(WheelConn& k) {
    wheel_.cancel(k.read());
    wheel_.cancel(k.write());
    wheel_.cancel(k.request());
  }

  static inline WheelTracker* self_ = nullptr;  // callbacks are plain function pointers
  TimingWheel wheel_;
  std::unique_ptr<WheelConn[]> conns_;
  std::size_t n_;
  SimConfig cfg_;
  Checker& chk_;
  TrackerCounters counters_;
};

struct UvConn {
  uv_timer_t read, write, request;  // data points back to the UvConn
  std::uint64_t io_count = 0;
};

class UvTracker {
 public:
  static constexpr const char* kName = "uv_timer";
  static constexpr bool kTimersFirst = true;  // libuv runs timers before polling I/O

  UvTracker(std::size_t n, const SimConfig& cfg, Checker& chk)
      : conns_(std::make_unique<UvConn[]>(n)), n_(n), chk_(chk) {
    self_ = this;
    read_ms_ = ceil_ms(cfg.read_idle);
    write_ms_ = ceil_ms(cfg.write_idle);
    request_ms_ = ceil_ms(cfg.request_timeout);
    virtual_clock_set(to_ns(cfg.start));
    if (uv_loop_init(&loop_) != 0) throw std::runtime_error("uv_loop_init failed");
    if (!libuv_reads_virtual_clock(&loop_))
      throw std::runtime_error("libuv does not read the virtual clock (is libuv linked statically?)");
    for (std::size_t c = 0; c < n; ++c) {
      for (uv_timer_t* t : {&conns_[c].read, &conns_[c].write, &conns_[c].request}) {
        heartwheel::check_uv(uv_timer_init(&loop_, t), "uv_timer_init");
        t->data = &conns_[c];
      }
    }
  }
  ~UvTracker() {
    for (std::size_t c = 0; c < n_; ++c)
      for (uv_timer_t* t : {&conns_[c].read, &conns_[c].write, &conns_[c].request})
        uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
    virtual_clock_disable();
  }
  UvTracker(const UvTracker&) = delete;
  UvTracker& operator=(const UvTracker&) = delete;

  void open(std::size_t c, TimePoint now) {
    UvConn& k = conns_[c];
    uv_timer_start(&k.read, on_idle, ceil_ms(chk_[c].last_read + Duration(read_ms_ * 1'000'000) - now), 0);
    uv_timer_start(&k.write, on_idle, ceil_ms(chk_[c].last_write + Duration(write_ms_ * 1'000'000) - now), 0);
  }
  void on_read(std::size_t c, TimePoint) {
    UvConn& k = conns_[c];
    ++k.io_count;
    uv_timer_start(&k.read, on_idle, read_ms_, 0);
    ++counters_.timer_ops;
  }
  void on_write(std::size_t c, TimePoint) {
    UvConn& k = conns_[c];
    ++k.io_count;
    uv_timer_start(&k.write, on_idle, write_ms_, 0);
    ++counters_.timer_ops;
  }
  void begin_request(std::size_t c, TimePoint) {
    uv_timer_start(&conns_[c].request, on_request_timeout, request_ms_, 0);
    ++counters_.timer_ops;
  }
  void end_request(std::size_t c) {
    uv_timer_stop(&conns_[c].request);
    ++counters_.timer_ops;
  }
  void run_timers(TimePoint now) {
    virtual_clock_set(to_ns(now));
    uv_run(&loop_, UV_RUN_NOWAIT);  // updates the loop time, runs due timers
  }
  static double bytes_per_connection() { return 3 * sizeof(uv_timer_t); }
  const TrackerCounters& counters() const { return counters_; }

 private:
  static std::uint64_t ceil_ms(Duration d) { return to_uv_millis_ceil(d); }
  TimePoint loop_now() { return from_uv_millis(uv_now(&loop_)); }
  std::size_t index_of(uv_timer_t* t) { return static_cast<std::size_t>(static_cast<UvConn*>(t->data) - conns_.get()); }

  static void on_idle(uv_timer_t* t) {
    UvTracker& s = *self_;
    auto* k = static_cast<UvConn*>(t->data);
    ++s.counters_.fires;
    uv_timer_stop(&k->read);
    uv_timer_stop(&k->write);
    uv_timer_stop(&k->request);
    s.counters_.timer_ops += 3;
    s.chk_.on_close(s.index_of(t), s.loop_now());
  }
  static void on_request_timeout(uv_timer_t* t) {
    UvTracker& s = *self_;
    ++s.counters_.fires;
    s.chk_.on_request_timeout(s.index_of(t), s.loop_now());
  }

  static inline UvTracker* self_ = nullptr;
  uv_loop_t loop_{};
  std::unique_ptr<UvConn[]> conns_;
  std::size_t n_;
  Checker& chk_;
  std::uint64_t read_ms_ = 0, write_ms_ = 0, request_ms_ = 0;
  TrackerCounters counters_;
};

}  // namespace heartwheel::bench
