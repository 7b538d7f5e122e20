// The read stamp alone (DeadlineTimer::note_read, lazy refresh), thread CPU
// time per call: N timers, reads round-robin, the virtual clock moved 1 ms
// every N reads. Built against the before and after sources alike (not part
// of the build; docs/bench-history/memory.md, "The deadline set in ticks"):
//   S=<source tree>; for f in lib/src/net/deadline_set.cpp lib/src/net/deadline_timer.cpp \
//     lib/src/timer/timing_wheel.cpp lib/src/timer/virtual_clock.cpp lib/src/timer/timer_clock.cpp \
//     lib/src/common/duration_parse.cpp lib/src/common/error.cpp; do SRC="$SRC $S/$f"; done
//   g++ -std=c++20 -O2 -DNDEBUG -I$S/lib/include docs/bench-results/read_stamp_bench.cpp $SRC \
//     -o read-stamp -luv -lpthread
//   ./read-stamp 100000; ./read-stamp 1000
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/virtual_clock.h>
#include <cstdio>
#include <ctime>
#include <memory>
#include <vector>
using namespace std::chrono_literals;
namespace net = heartwheel::net;
class Conn final : public net::DeadlineTimer {
 public:
  explicit Conn(heartwheel::TimerService& t) : s_(&t) {}
  ~Conn() override { stop_deadlines(); }
 private:
  heartwheel::TimerService& timer_service() const noexcept override { return *s_; }
  void on_deadline_event(net::DeadlineEvent, heartwheel::TimePoint) override {}
  heartwheel::TimerService* s_;
};
static double cpu() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::atoi(argv[1]) : 100000;
  const std::size_t rounds = 200;
  heartwheel::ManualTimerService timers(1ms);
  net::IdlePolicy policy{.read_idle = 1h, .write_idle = 1h};
  std::vector<std::unique_ptr<Conn>> conns;
  for (std::size_t i = 0; i < n; ++i) { conns.push_back(std::make_unique<Conn>(timers)); conns.back()->start_deadlines(policy); }
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = cpu();
    for (std::size_t r = 0; r < rounds; ++r) {
      for (auto& c : conns) c->note_read();
      timers.clock().advance(1ms);  // time moves, the wheel is not advanced (nothing due within 1 h)
    }
    const double ns = (cpu() - t0) * 1e9 / double(rounds * n);
    if (ns < best) best = ns;
  }
  std::printf("{\"bench\":\"read_stamp\",\"timers\":%zu,\"sizeof_timer\":%zu,\"best_of_5_ns_per_stamp\":%.2f}\n", n, sizeof(Conn), best);
}
