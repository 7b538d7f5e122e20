// run_prefork called directly, with children that misbehave: one that closes
// its report pipe and keeps running, and a restart that cannot fork. Every
// child arms alarm() as a backstop, so no case can leave a process behind or
// hang for longer than that.
#include <heartwheel/runtime/prefork.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <system_error>
#include <thread>
#include <vector>

namespace runtime = heartwheel::runtime;
using namespace std::chrono_literals;

namespace {

constexpr unsigned kBackstopSeconds = 10;  // a stuck child dies of SIGALRM after this

long long ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t)
      .count();
}

// In a child: from now on SIGTERM waits for wait_for_sigterm() instead of
// killing the process.
sigset_t block_sigterm() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  alarm(kBackstopSeconds);
  return set;
}

// Returns once SIGTERM arrived (0), or the child dies of SIGALRM at the backstop.
int wait_for_sigterm(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}

extern "C" void sentinel_handler(int) {}

struct Disposition {
  void (*handler)(int);
};
Disposition disposition(int sig) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return {now.sa_handler};
}

// Lowers the soft descriptor limit to the lowest free descriptor, so the next
// pipe() fails with EMFILE; restores it when destroyed.
class NoMoreDescriptors {
 public:
  NoMoreDescriptors() { getrlimit(RLIMIT_NOFILE, &saved_); }
  void now() {
    const int lowest_free = ::dup(0);
    ::close(lowest_free);
    rlimit tight = saved_;
    tight.rlim_cur = static_cast<rlim_t>(lowest_free);
    setrlimit(RLIMIT_NOFILE, &tight);
  }
  ~NoMoreDescriptors() { setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

}  // namespace

TEST_CASE("A prefork child that closes its pipe and runs on still gets SIGTERM and is reaped",
          "[net][prefork][process]") {
  // The child closes every descriptor (its report pipe among them), then
  // asks the parent to shut down and waits for the forwarded SIGTERM. A
  // parent that blocked in waitpid() at the pipe's EOF would forward nothing:
  // the child would die of its alarm after 10 s.
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = runtime::run_prefork(
      1,
      [](runtime::PreforkChild& child) {
        const sigset_t term = block_sigterm();
        child.ready();
        ::close_range(3, ~0U, 0);
        std::this_thread::sleep_for(300ms);  // the parent sees the EOF first
        ::kill(::getppid(), SIGTERM);
        return wait_for_sigterm(term);
      },
      nullptr);
  CHECK(ms_since(t0) < 5000);
  CHECK(result.all_ready);
  REQUIRE(result.exit_statuses.size() == 1);
  CHECK(result.exit_statuses[0] == 0);  // 142 (SIGALRM) if SIGTERM never came
  CHECK(result.exit_code == 0);
  CHECK(result.restarts == 0);
}

TEST_CASE("When a restart cannot fork, run_prefork throws with the signal handlers restored",
          "[net][prefork][process]") {
  // Child 0 dies while serving; its restart needs a pipe, and on_ready took
  // every descriptor away. The exception must leave behind the SIGTERM and
  // SIGINT handlers found at the call and no child process.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer runtimes need descriptors of their own (UBSan's vptr check
  // probes memory through a pipe and reports a false "invalid vptr" when it
  // cannot make one), so this case runs in the plain build only.
  WARN("skipped under sanitizers: they need free descriptors");
  return;
#endif
  struct sigaction mine {};
  mine.sa_handler = sentinel_handler;
  sigemptyset(&mine.sa_mask);
  struct sigaction old_term {
  }, old_int{};
  sigaction(SIGTERM, &mine, &old_term);
  sigaction(SIGINT, &mine, &old_int);
  const auto chld_before = disposition(SIGCHLD).handler;

  NoMoreDescriptors limit;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(runtime::run_prefork(
                      2,
                      [](runtime::PreforkChild& child) {
                        const sigset_t term = block_sigterm();
                        child.ready();
                        if (child.index() == 0) {
                          std::this_thread::sleep_for(200ms);  // after on_ready
                          return 3;
                        }
                        return wait_for_sigterm(term);
                      },
                      [&] { limit.now(); }),
                  std::system_error);
  const auto elapsed = ms_since(t0);
  CHECK(disposition(SIGTERM).handler == sentinel_handler);
  CHECK(disposition(SIGINT).handler == sentinel_handler);
  CHECK(disposition(SIGCHLD).handler == chld_before);
  // Child 1 was stopped (SIGTERM) and reaped before the exception left.
  CHECK(elapsed < 5000);
  errno = 0;
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
}

TEST_CASE("With forward_hangup SIGHUP reaches the serving children, and a late one once it is ready",
          "[net][prefork][process]") {
  // Child 0 says ready and sends the parent SIGHUP while child 1 is still
  // starting (it says ready 500 ms later): child 0 must get it at once,
  // child 1 once it said ready (earlier, with no handler up, it would die).
  // Child 1 then asks for the shutdown. A child that never gets its SIGHUP
  // dies of its alarm (status 142) after 10 s.
  const auto hup_before = disposition(SIGHUP).handler;
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = runtime::run_prefork(
      2,
      [](runtime::PreforkChild& child) {
        const sigset_t term = block_sigterm();
        // Child 1 starts with SIGHUP's default (fatal) for 500 ms: a SIGHUP
        // passed on before it said ready would kill it.
        if (child.index() == 1) std::this_thread::sleep_for(500ms);
        sigset_t hup;
        sigemptyset(&hup);
        sigaddset(&hup, SIGHUP);
        sigprocmask(SIG_BLOCK, &hup, nullptr);  // its "handler" is up
        child.ready();
        if (child.index() == 0) ::kill(::getppid(), SIGHUP);
        int sig = 0;
        sigwait(&hup, &sig);
        if (child.index() == 1) ::kill(::getppid(), SIGTERM);
        return wait_for_sigterm(term);
      },
      nullptr, runtime::kPreforkMaxRestarts, true);
  CHECK(ms_since(t0) < 5000);
  CHECK(result.all_ready);
  CHECK(result.exit_statuses == std::vector<int>{0, 0});
  CHECK(result.restarts == 0);
  CHECK(disposition(SIGHUP).handler == hup_before);
}
