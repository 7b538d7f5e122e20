// heartwheel-read-stamp-bench: the read stamp alone (DeadlineTimer::note_read,
// lazy refresh), thread CPU time per call. N timers on a manual clock, reads
// round-robin, the clock moved 1 ms every N reads (the wheel is not advanced:
// nothing is due within the hour). README.md beside this file has the usage
// and how the before/after figures of docs/bench-history/memory.md were made.
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/virtual_clock.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;

namespace {

// The smallest owner of a DeadlineTimer: what a connection adds on the stamp
// path is its host's timer service.
class Conn final : public net::DeadlineTimer {
 public:
  explicit Conn(heartwheel::TimerService& t) : service_(&t) {}
  ~Conn() override { stop_deadlines(); }

 private:
  heartwheel::TimerService& timer_service() const noexcept override { return *service_; }
  void on_deadline_event(net::DeadlineEvent, heartwheel::TimePoint) override {}
  heartwheel::TimerService* service_;
};

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const long arg = argc > 1 ? std::atol(argv[1]) : 100000;
  if (arg < 1) {
    std::fprintf(stderr, "heartwheel-read-stamp-bench: error: TIMERS must be >= 1\n");
    return 2;
  }
  const auto n = static_cast<std::size_t>(arg);
  constexpr std::size_t kRounds = 200;
  heartwheel::ManualTimerService timers(1ms);
  const net::IdlePolicy policy{.read_idle = 1h, .write_idle = 1h};
  std::vector<std::unique_ptr<Conn>> conns;
  conns.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    conns.push_back(std::make_unique<Conn>(timers));
    conns.back()->start_deadlines(policy);
  }
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = thread_cpu_seconds();
    for (std::size_t r = 0; r < kRounds; ++r) {
      for (auto& c : conns) c->note_read();
      timers.clock().advance(1ms);
    }
    const double ns = (thread_cpu_seconds() - t0) * 1e9 / static_cast<double>(kRounds * n);
    if (ns < best) best = ns;
  }
  std::printf(
      "{\"bench\":\"read_stamp\",\"timers\":%zu,\"sizeof_timer\":%zu,"
      "\"best_of_5_ns_per_stamp\":%.2f}\n",
      n, sizeof(Conn), best);
  return 0;
}
