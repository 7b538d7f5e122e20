// heartwheel-idle-refresh-bench: lazy vs eager refresh of idle deadlines, on
// a manual clock (no sockets): N connections, each with read and write idle
// timeouts in one wheel, receive random I/O events over simulated time.
// Lazy refresh stores a timestamp per event and re-arms when the entry
// fires; eager refresh relinks the entry on every event. Prints the cost per
// I/O event of each and the ratio eager/lazy, measured in the same run.
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/virtual_clock.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_program.h"

namespace net = heartwheel::net;
using heartwheel::Duration;
using namespace std::chrono_literals;

namespace {

class Conn final : public net::DeadlineTimer {
 public:
  explicit Conn(heartwheel::TimerService& t) : service_(&t) {}
  ~Conn() override { stop_deadlines(); }
  std::uint64_t events = 0;

 private:
  heartwheel::TimerService& timer_service() const noexcept override { return *service_; }
  void on_deadline_event(net::DeadlineEvent, heartwheel::TimePoint) override { ++events; }
  heartwheel::TimerService* service_;
};

struct Result {
  double ns_per_io;
  std::uint64_t scheduled, relinked, fired, idle_events;
};

Result run(net::RefreshMode mode, std::size_t connections, std::uint64_t io_events, Duration sim,
           Duration timeout, std::uint64_t seed) {
  heartwheel::ManualTimerService timers(1ms);
  net::IdlePolicy policy{.read_idle = timeout, .write_idle = timeout, .refresh = mode};
  std::vector<std::unique_ptr<Conn>> conns;
  conns.reserve(connections);
  for (std::size_t i = 0; i < connections; ++i) {
    conns.push_back(std::make_unique<Conn>(timers));
    conns.back()->start_deadlines(policy);
  }
  std::mt19937_64 rng(seed);
  const auto steps = static_cast<std::uint64_t>(sim / 1ms);
  const std::uint64_t per_step = io_events / steps;
  // Pre-draw the targets so the random generator is not timed.
  constexpr std::uint64_t kBatch = 64;  // steps per batch of drawn targets
  std::vector<std::uint32_t> targets(per_step * kBatch);
  std::chrono::steady_clock::duration elapsed{};
  auto start = std::chrono::steady_clock::now();
  for (std::uint64_t s = 0; s < steps; ++s) {
    if (s % kBatch == 0) {
      elapsed += std::chrono::steady_clock::now() - start;  // drawing is not timed
      for (auto& t : targets) t = static_cast<std::uint32_t>(rng() % connections);
      start = std::chrono::steady_clock::now();
    }
    const std::uint32_t* batch = targets.data() + (s % kBatch) * per_step;
    for (std::uint64_t k = 0; k < per_step; ++k) {
      Conn& c = *conns[batch[k]];
      if (k & 1) {
        c.note_read();
      } else {
        c.note_write();
      }
    }
    timers.run_for(1ms);
  }
  elapsed += std::chrono::steady_clock::now() - start;
  Result r{};
  r.ns_per_io =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) /
      static_cast<double>(per_step * steps);
  const auto& st = timers.wheel().stats();
  r.scheduled = st.scheduled;
  r.relinked = st.relinked;
  r.fired = st.fired;
  for (auto& c : conns) r.idle_events += c->events;
  for (auto& c : conns) c->stop_deadlines();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t connections = 100000;
  std::uint64_t io_events = 5'000'000;
  std::string sim = "120s", timeout = "30s";
  std::uint64_t seed = 1;
  bool json = false;
  CLI::App app{
      "Lazy vs eager refresh of per-connection idle deadlines in one timing wheel "
      "(simulated connections, manual clock). Exit status: 0 ok, 2 usage error.",
      "heartwheel-idle-refresh-bench"};
  app.add_option("--connections", connections, "simulated connections")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{UINT32_MAX}));
  app.add_option("--io-events", io_events,
                 "reads+writes spread uniformly over connections and time (at least one per "
                 "simulated millisecond)")
      ->capture_default_str();
  app.add_option("--duration", sim, "simulated time (>= 1ms)")->capture_default_str();
  app.add_option("--timeout", timeout, "read and write idle timeout (> 0)")->capture_default_str();
  app.add_option("--seed", seed, "random seed")->capture_default_str();
  app.add_flag("--json", json, "print one JSON line per mode and one for the ratio");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  Duration sim_d{}, timeout_d{};
  try {
    sim_d = heartwheel::cli::parse_duration_flag("--duration", sim);
    timeout_d = heartwheel::cli::parse_duration_flag("--timeout", timeout);
    if (sim_d < 1ms) throw std::invalid_argument("--duration must be at least 1ms");
    if (timeout_d <= Duration::zero()) throw std::invalid_argument("--timeout must be positive");
    const auto steps = static_cast<std::uint64_t>(sim_d / 1ms);
    if (io_events < steps)
      throw std::invalid_argument("--io-events must be at least one per simulated millisecond: " +
                                  std::to_string(steps) + " for --duration " + sim);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  return heartwheel::cli::run(app, [&] {
    const Result lazy = run(net::RefreshMode::lazy, connections, io_events, sim_d, timeout_d, seed);
    const Result eager =
        run(net::RefreshMode::eager, connections, io_events, sim_d, timeout_d, seed);
    for (const auto& [name, r] : {std::pair{"lazy", lazy}, std::pair{"eager", eager}}) {
      if (json) {
        std::printf(
            "{\"bench\":\"idle_refresh\",\"mode\":\"%s\",\"connections\":%zu,\"io_events\":%llu,"
            "\"ns_per_io\":%.2f,\"wheel_scheduled\":%llu,\"wheel_relinked\":%llu,\"wheel_fired\":%"
            "llu,"
            "\"idle_events\":%llu}\n",
            name, connections, static_cast<unsigned long long>(io_events), r.ns_per_io,
            static_cast<unsigned long long>(r.scheduled),
            static_cast<unsigned long long>(r.relinked), static_cast<unsigned long long>(r.fired),
            static_cast<unsigned long long>(r.idle_events));
      } else {
        std::printf(
            "%-5s %8.2f ns/io  scheduled %llu  relinked %llu  fired %llu  idle events %llu\n", name,
            r.ns_per_io, static_cast<unsigned long long>(r.scheduled),
            static_cast<unsigned long long>(r.relinked), static_cast<unsigned long long>(r.fired),
            static_cast<unsigned long long>(r.idle_events));
      }
    }
    const double ratio = eager.ns_per_io / lazy.ns_per_io;
    if (json) {
      std::printf("{\"bench\":\"idle_refresh\",\"baseline\":\"lazy\",\"eager_over_lazy\":%.3f}\n",
                  ratio);
    } else {
      std::printf("eager / lazy = %.2f\n", ratio);
    }
    return 0;
  });
}
