// heartwheel-overload-bench: what overload protection costs and what it buys,
// on a manual clock (no sockets). N simulated connections, each a
// DeadlineTimer with the read-idle timeout of one shared IdlePolicy (as a
// Server's connections share theirs); most read every --read-interval, a
// fraction never reads. At --pressure-at the policy's timeout drops to
// --floor (the scale at saturation). Three ways to apply it:
//   lazy     one store; each entry finds the new timeout when it fires
//   sweep    the same store, plus the activity order on the read path and
//            the tail re-arm (ActivityList::sweep, as net::Server runs it)
//   walk     the store, then re-arm every connection at once (O(N))
// For each: the cost of applying the scale, the sweeper's work, the expiry
// work, and how long after the pressure the silent connections closed (and
// that no reading one did). First, the read path alone: the same
// connections read with and without the activity order's stamp and move,
// alternating every 8 read intervals, so both halves see the same memory.
#include <heartwheel/net/activity_list.h>
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/net/overload.h>
#include <heartwheel/timer/virtual_clock.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_program.h"

namespace net = heartwheel::net;
using heartwheel::Duration;
using heartwheel::TimePoint;
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

namespace {

enum class Mode { lazy, sweep, walk };
const char* name(Mode m) { return m == Mode::lazy ? "lazy" : m == Mode::sweep ? "sweep" : "walk"; }

struct Conn;
using List = net::ActivityList<Conn>;

struct Conn final : net::DeadlineTimer {
  Conn(heartwheel::TimerService& t, List& l) : service(&t), list(&l) {}
  ~Conn() override { stop_deadlines(); }
  heartwheel::TimerService* service;
  List* list;
  Conn* next_in_host = nullptr;
  Conn* prev_in_host = nullptr;
  std::uint16_t host_activity_gen = 0;
  bool silent = false;
  bool listed = false;
  TimePoint closed_at = heartwheel::kNever;

 private:
  heartwheel::TimerService& timer_service() const noexcept override { return *service; }
  void on_deadline_event(net::DeadlineEvent, TimePoint now) override {
    closed_at = now;
    stop_deadlines();
    if (listed) list->remove(*this);  // as Server::connection_closed does
    listed = false;
  }
};

struct Options {
  std::size_t connections = 100000;
  double silent_fraction = 0.1;
  Duration read_interval = 1s, timeout = 30s, floor = 2s, granularity{0};
  Duration duration = 40s, pressure_at = 10s;
  std::uint64_t seed = 1;
};

struct Result {
  Mode mode;
  std::uint64_t reads = 0, moves = 0, sweeps = 0, swept = 0;
  double read_ns = 0, apply_ns = 0, sweep_ns = 0, expiry_ns = 0;
  std::size_t silent = 0, silent_closed = 0, active_closed = 0;
  Duration close_delay_max{0}, close_delay_p50{0};  // after max(pressure, read + floor)
};

// Connection i is silent when floor((i+1)f) > floor(if): spread evenly, as
// heartwheel-load picks its dead connections.
bool is_silent(double fraction, std::size_t i) {
  return static_cast<std::uint64_t>(static_cast<double>(i + 1) * fraction) >
         static_cast<std::uint64_t>(static_cast<double>(i) * fraction);
}

double ns(SteadyClock::duration d) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

struct ReadPath {
  std::uint64_t reads_off = 0, reads_on = 0, moves = 0;
  double ns_off = 0, ns_on = 0;
};

unsigned shift_for(const Options& o, const net::IdlePolicy& policy) {
  net::OverloadOptions overload;  // the same automatic granularity as net::Server's
  overload.saturation_connections = 1;
  overload.min_timeout = o.floor;
  overload.activity_granularity = o.granularity;
  return net::activity_shift(net::activity_granularity_for(overload, policy));
}

// Connection::on_read's stamp (note_read), and with `track` the activity
// order's generation check and move.
inline bool read(Conn& c, List& list, bool track, unsigned shift) {
  c.note_read();
  if (!track) return false;
  const auto gen = net::activity_generation(c.deadlines().read_anchor(c.scale()), shift);
  return gen != c.host_activity_gen && list.touch(c, gen);
}

ReadPath read_path(const Options& o) {
  heartwheel::ManualTimerService timers(1ms);
  net::IdlePolicy policy{.read_idle = o.timeout};
  List list;
  const unsigned shift = shift_for(o, policy);
  std::vector<std::unique_ptr<Conn>> conns;
  std::mt19937_64 rng(o.seed);
  const auto interval_ms = static_cast<std::size_t>(o.read_interval / 1ms);
  std::vector<std::vector<Conn*>> by_phase(interval_ms);
  for (std::size_t i = 0; i < o.connections; ++i) {
    conns.push_back(std::make_unique<Conn>(timers, list));
    conns.back()->start_deadlines(policy);
    list.push_front(*conns.back(), 0);
    by_phase[rng() % interval_ms].push_back(conns.back().get());
  }
  ReadPath rp;
  SteadyClock::duration off{}, on{};
  const auto steps = static_cast<std::uint64_t>(o.duration / 1ms);
  for (std::uint64_t s = 0; s < steps; ++s) {
    // Blocks of 8 whole intervals: every connection reads 8 times tracked,
    // then 8 times not, so moves per read are what a steady reader costs.
    const bool track = (s / interval_ms / 8) % 2 == 1;
    const auto t0 = SteadyClock::now();
    for (Conn* c : by_phase[s % interval_ms]) rp.moves += read(*c, list, track, shift);
    (track ? on : off) += SteadyClock::now() - t0;
    (track ? rp.reads_on : rp.reads_off) += by_phase[s % interval_ms].size();
    timers.run_for(1ms);
  }
  for (auto& c : conns) c->stop_deadlines();
  rp.ns_off = rp.reads_off ? ns(off) / static_cast<double>(rp.reads_off) : 0;
  rp.ns_on = rp.reads_on ? ns(on) / static_cast<double>(rp.reads_on) : 0;
  return rp;
}

Result run(Mode mode, const Options& o) {
  heartwheel::ManualTimerService timers(1ms);
  net::IdlePolicy policy{.read_idle = o.timeout};
  List list;
  const bool track = mode == Mode::sweep;
  const unsigned shift = shift_for(o, policy);
  std::vector<std::unique_ptr<Conn>> conns;
  std::mt19937_64 rng(o.seed);
  const auto interval_ms = static_cast<std::size_t>(o.read_interval / 1ms);
  std::vector<std::vector<Conn*>> by_phase(interval_ms);  // who reads in which ms of the interval
  for (std::size_t i = 0; i < o.connections; ++i) {
    conns.push_back(std::make_unique<Conn>(timers, list));
    Conn& c = *conns.back();
    c.silent = is_silent(o.silent_fraction, i);
    c.start_deadlines(policy);
    list.push_front(c, net::activity_generation(timers.now(), shift));
    c.listed = true;
    if (!c.silent) by_phase[rng() % interval_ms].push_back(&c);
  }
  // The sweeper: one entry, as net::Server's.
  struct Sweeper : heartwheel::TimerEntry {
    Sweeper() : TimerEntry(&fire) {}
    static void fire(heartwheel::TimerEntry& e) { static_cast<Sweeper&>(e).step(); }
    std::function<void()> step;
  } sweeper;
  Result r{};
  r.mode = mode;
  SteadyClock::duration read_time{}, sweep_time{}, expiry_time{};
  sweeper.step = [&] {
    const auto t0 = SteadyClock::now();
    ++r.sweeps;
    std::size_t budget = 4096;
    const TimePoint now = timers.now();
    const TimePoint next = list.sweep(
        now, policy.read_idle, Duration(Duration::rep{1} << shift), budget,
        [](Conn& c) { return c.deadlines().read_anchor(c.scale()); },
        [&](Conn& c) {
          c.policy_changed();
          ++r.swept;
        });
    if (next != heartwheel::kNever) timers.schedule_at(sweeper, std::max(next, now));
    sweep_time += SteadyClock::now() - t0;
  };
  const TimePoint start = timers.now();
  const TimePoint pressure = start + o.pressure_at;
  const auto steps = static_cast<std::uint64_t>(o.duration / 1ms);
  for (std::uint64_t s = 0; s < steps; ++s) {
    if (timers.now() == pressure) {
      const auto t0 = SteadyClock::now();
      policy.read_idle = o.floor;  // the scale at saturation: three stores in net::Server
      if (mode == Mode::walk)
        for (auto& c : conns) c->policy_changed();
      if (mode == Mode::sweep) {
        list.restart_sweep();
        timers.schedule_at(sweeper, timers.now());
      }
      r.apply_ns = ns(SteadyClock::now() - t0);
    }
    // The read path: Connection::on_read's stamp, and the order's move.
    const auto t0 = SteadyClock::now();
    for (Conn* c : by_phase[s % interval_ms]) {
      if (c->closed_at != heartwheel::kNever) continue;
      ++r.reads;
      r.moves += read(*c, list, track, shift);
    }
    const auto t1 = SteadyClock::now();
    read_time += t1 - t0;
    timers.run_for(1ms);
    expiry_time += SteadyClock::now() - t1;
  }
  expiry_time -= sweep_time;  // the sweeper runs inside the expiry
  std::vector<Duration> delays;
  for (auto& c : conns) {
    if (!c->silent) {
      r.active_closed += c->closed_at != heartwheel::kNever;
    } else {
      ++r.silent;
      if (c->closed_at == heartwheel::kNever) continue;
      ++r.silent_closed;
      // Never read: due at the floor after the start, or at once under the
      // pressure if that has passed already.
      const TimePoint due = std::max(pressure, start + o.floor);
      delays.push_back(c->closed_at - due);
    }
    c->stop_deadlines();
  }
  if (sweeper.armed()) timers.cancel(sweeper);
  std::sort(delays.begin(), delays.end());
  if (!delays.empty()) {
    r.close_delay_max = delays.back();
    r.close_delay_p50 = delays[delays.size() / 2];
  }
  r.read_ns = r.reads ? ns(read_time) / static_cast<double>(r.reads) : 0;
  r.sweep_ns = ns(sweep_time);
  r.expiry_ns = ns(expiry_time);
  return r;
}

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string read_interval = "1s", timeout = "30s", floor = "2s", granularity = "0",
              duration = "40s", pressure_at = "10s";
  bool json = false;
  CLI::App app{
      "What overload protection costs on the read path and what it buys: simulated "
      "connections on a manual clock, idle timeouts scaled to a floor at --pressure-at, "
      "applied lazily, with the tail re-arm, or by re-arming every connection. "
      "Exit status: 0 ok, 2 usage error.",
      "heartwheel-overload-bench"};
  app.add_option("--connections", o.connections, "simulated connections")
      ->check(CLI::Range(std::size_t{1}, std::size_t{10000000}))
      ->capture_default_str();
  app.add_option("--silent-fraction", o.silent_fraction, "connections that never read")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--read-interval", read_interval, "the others read this often (>= 1ms)")
      ->capture_default_str();
  app.add_option("--timeout", timeout, "unscaled read idle timeout")->capture_default_str();
  app.add_option("--floor", floor, "the timeout under pressure")->capture_default_str();
  app.add_option("--granularity", granularity,
                 "activity order granularity (0: as net::Server picks it, min(1s, floor/8))")
      ->capture_default_str();
  app.add_option("--pressure-at", pressure_at, "when the pressure comes")->capture_default_str();
  app.add_option("--duration", duration, "simulated time")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_flag("--json", json, "one JSON line per mode");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  try {
    using heartwheel::cli::parse_duration_flag;
    o.read_interval = parse_duration_flag("--read-interval", read_interval);
    o.timeout = parse_duration_flag("--timeout", timeout);
    o.floor = parse_duration_flag("--floor", floor);
    o.granularity = parse_duration_flag("--granularity", granularity);
    o.pressure_at = parse_duration_flag("--pressure-at", pressure_at);
    o.duration = parse_duration_flag("--duration", duration);
    if (o.read_interval < 1ms) throw std::invalid_argument("--read-interval must be at least 1ms");
    if (o.floor <= Duration::zero() || o.floor > o.timeout)
      throw std::invalid_argument("--floor must be positive and at most --timeout");
    if (o.granularity.count() != 0 && o.granularity < 1ms)
      throw std::invalid_argument("--granularity must be at least 1ms (or 0)");
    if (o.pressure_at >= o.duration)
      throw std::invalid_argument("--pressure-at must be before the end of --duration");
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }
  return heartwheel::cli::run(app, [&] {
    const ReadPath rp = read_path(o);
    if (json) {
      std::printf(
          "{\"bench\":\"overload_read_path\",\"connections\":%zu,\"ns_per_read_off\":%.2f,"
          "\"ns_per_read_on\":%.2f,\"moves_per_read_on\":%.3f}\n",
          o.connections, rp.ns_off, rp.ns_on,
          rp.reads_on ? static_cast<double>(rp.moves) / static_cast<double>(rp.reads_on) : 0.0);
    } else {
      std::printf(
          "read path: %.2f ns/read without the activity order, %.2f ns with it (%.2f moves per "
          "read)\n",
          rp.ns_off, rp.ns_on,
          rp.reads_on ? static_cast<double>(rp.moves) / static_cast<double>(rp.reads_on) : 0.0);
    }
    for (Mode m : {Mode::lazy, Mode::sweep, Mode::walk}) {
      const Result r = run(m, o);
      if (json) {
        std::printf(
            "{\"bench\":\"overload\",\"mode\":\"%s\",\"connections\":%zu,\"reads\":%llu,"
            "\"read_ns\":%.2f,\"moves\":%llu,\"apply_ns\":%.0f,\"sweeps\":%llu,\"swept\":%llu,"
            "\"sweep_ns\":%.0f,\"expiry_ns\":%.0f,\"silent\":%zu,\"silent_closed\":%zu,"
            "\"active_closed\":%zu,\"close_delay_ms\":{\"p50\":%.1f,\"max\":%.1f}}\n",
            name(m), o.connections, static_cast<unsigned long long>(r.reads), r.read_ns,
            static_cast<unsigned long long>(r.moves), r.apply_ns,
            static_cast<unsigned long long>(r.sweeps), static_cast<unsigned long long>(r.swept),
            r.sweep_ns, r.expiry_ns, r.silent, r.silent_closed, r.active_closed,
            ms(r.close_delay_p50), ms(r.close_delay_max));
      } else {
        std::printf(
            "%-5s read %6.2f ns (moves %llu)  apply %10.0f ns  sweeps %llu swept %llu in %.2f ms"
            "  expiry %.1f ms  silent closed %zu/%zu, delay p50 %.1f ms max %.1f ms  active "
            "closed %zu\n",
            name(m), r.read_ns, static_cast<unsigned long long>(r.moves), r.apply_ns,
            static_cast<unsigned long long>(r.sweeps), static_cast<unsigned long long>(r.swept),
            r.sweep_ns / 1e6, r.expiry_ns / 1e6, r.silent_closed, r.silent, ms(r.close_delay_p50),
            ms(r.close_delay_max), r.active_closed);
      }
    }
    return 0;
  });
}
