// See heartwheel/runtime/prefork.h. Parent side: one pipe per child carries
// 'R' (ready) and 'D' <8-byte length> <bytes> (report). Signals reach the
// parent's poll() through a self-pipe: SIGTERM/SIGINT are forwarded, SIGCHLD
// says "reap now", SIGHUP (when asked for) is forwarded to the children that
// serve and owed to the others until they do. A child is reaped only when waitpid(WNOHANG) says it
// ended, never because its pipe closed: a child may close its pipe and keep running.
#include <fcntl.h>
#include <heartwheel/common/log.h>
#include <heartwheel/runtime/prefork.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace heartwheel::runtime {

namespace {

int g_signal_pipe[2] = {-1, -1};

extern "C" void on_parent_signal(int sig) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

bool write_all(int fd, const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// The parent's handlers for SIGTERM, SIGINT and SIGCHLD (and SIGHUP when
// forwarded) and the self-pipe they write to, for the duration of
// run_prefork. The destructor puts back the dispositions found at
// construction and closes the pipe, on every way out, exceptions included.
class ParentSignals {
 public:
  explicit ParentSignals(bool hangup) : count_(hangup ? kSignals.size() : kSignals.size() - 1) {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw_errno("prefork: pipe");
    struct sigaction sa {};
    sa.sa_handler = on_parent_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NOCLDSTOP;  // SIGCHLD for exits only, not for stops
    for (std::size_t i = 0; i < count_; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~ParentSignals() {
    for (std::size_t i = 0; i < count_; ++i) sigaction(kSignals[i], &old_[i], nullptr);
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }
  ParentSignals(const ParentSignals&) = delete;
  ParentSignals& operator=(const ParentSignals&) = delete;

  int read_fd() const noexcept { return g_signal_pipe[0]; }

  // Blocks the signals around fork(): a signal that reached a new
  // child before it reset its handlers would run the parent's handler there
  // and write into the parent's self-pipe. Returns the mask to restore.
  static sigset_t block() noexcept {
    sigset_t set, old;
    sigemptyset(&set);
    for (int sig : kSignals) sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    return old;
  }
  static void unblock(const sigset_t& old) noexcept { pthread_sigmask(SIG_SETMASK, &old, nullptr); }

  // In a freshly forked child (signals blocked): the dispositions the parent
  // installed are the defaults again (the others stay inherited: SIGHUP
  // ignored under nohup stays ignored), then `old` is its mask again.
  void reset_in_child(const sigset_t& old) const noexcept {
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    for (std::size_t i = 0; i < count_; ++i) ::signal(kSignals[i], SIG_DFL);
    unblock(old);
  }

 private:
  // SIGHUP last: installed only when forwarded.
  static constexpr std::array<int, 4> kSignals = {SIGTERM, SIGINT, SIGCHLD, SIGHUP};
  std::size_t count_;
  std::array<struct sigaction, 4> old_{};
};

struct Child {
  pid_t pid = -1;
  int fd = -1;  // read end of its pipe; -1 once the pipe reached EOF
  std::string buffer;
  bool ready = false;
  bool serving = false;      // it said 'R' itself (a restarted child is `ready` at once, not this)
  bool hangup_owed = false;  // a forwarded SIGHUP waits until it serves
  bool reaped = false;
};

// Parses what arrived so far: 'R' and complete 'D' frames.
void parse(Child& c, std::string& report) {
  for (;;) {
    if (c.buffer.empty()) return;
    if (c.buffer[0] == 'R') {
      c.ready = c.serving = true;
      c.buffer.erase(0, 1);
      continue;
    }
    if (c.buffer[0] == 'D') {
      if (c.buffer.size() < 9) return;
      std::uint64_t len;
      std::memcpy(&len, c.buffer.data() + 1, 8);
      if (c.buffer.size() < 9 + len) return;
      report.assign(c.buffer, 9, len);
      c.buffer.erase(0, 9 + len);
      continue;
    }
    c.buffer.erase(0, 1);  // unknown byte: skip
  }
}

// Reads what the pipe holds (non-blocking); closes it at EOF or error.
void drain(Child& c, std::string& report) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(c.fd, buf, sizeof buf);
    if (n > 0) {
      c.buffer.append(buf, static_cast<std::size_t>(n));
      parse(c, report);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    ::close(c.fd);
    c.fd = -1;
    return;
  }
}

// The children of one run_prefork call. If run_prefork leaves by an
// exception, the destructor stops the children still running (SIGTERM, then
// SIGKILL after kStopGrace) and reaps them: without their supervisor nobody
// would forward signals to them or reap them.
class Children {
 public:
  static constexpr auto kStopGrace = std::chrono::seconds(10);

  explicit Children(unsigned n) : list_(n) {}
  ~Children() {
    if (!done_) stop_and_reap();
    for (auto& c : list_)
      if (c.fd >= 0) ::close(c.fd);
  }
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;

  Child& operator[](std::size_t i) { return list_[i]; }
  std::size_t size() const noexcept { return list_.size(); }
  std::vector<Child>& all() noexcept { return list_; }
  void finished() noexcept { done_ = true; }

  void signal_all(int sig) noexcept {
    for (auto& c : list_)
      if (c.pid > 0 && !c.reaped) ::kill(c.pid, sig);
  }

 private:
  void stop_and_reap() noexcept {
    signal_all(SIGTERM);
    const auto give_up = std::chrono::steady_clock::now() + kStopGrace;
    for (auto& c : list_) {
      while (c.pid > 0 && !c.reaped) {
        int status;
        const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
        if (r == c.pid || (r < 0 && errno != EINTR)) {
          c.reaped = true;
        } else if (std::chrono::steady_clock::now() >= give_up) {
          ::kill(c.pid, SIGKILL);
          while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
          }
          c.reaped = true;
        } else {
          ::usleep(10'000);
        }
      }
    }
  }

  std::vector<Child> list_;
  bool done_ = false;
};

}  // namespace

void PreforkChild::ready() noexcept { write_all(fd_, "R", 1); }

void PreforkChild::report(std::string_view bytes) noexcept {
  const std::uint64_t len = bytes.size();
  write_all(fd_, "D", 1);
  write_all(fd_, &len, sizeof len);
  write_all(fd_, bytes.data(), bytes.size());
}

PreforkResult run_prefork(unsigned processes, const std::function<int(PreforkChild&)>& child_main,
                          const std::function<void()>& on_ready, unsigned max_restarts,
                          bool forward_hangup) {
  PreforkResult result;
  result.reports.resize(processes);
  result.exit_statuses.resize(processes, 0);
  std::fflush(nullptr);  // or buffered output is written once per process
  // Handlers first: a SIGTERM while the children are being forked is then
  // forwarded to them, not fatal to the parent alone. Destroyed last.
  ParentSignals signals(forward_hangup);
  Children children(processes);
  // A SIGHUP came: every child forked from here on holds the parent's
  // memory from before it (a reload's old certificates), so it is owed one.
  bool hangup_seen = false;

  // Forks child `i`; in the child, never returns.
  auto spawn = [&](unsigned i) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("prefork: pipe");
    const sigset_t mask = ParentSignals::block();
    const pid_t pid = ::fork();
    if (pid != 0) ParentSignals::unblock(mask);
    if (pid < 0) {
      const int saved = errno;
      ::close(fds[0]);
      ::close(fds[1]);
      errno = saved;
      throw_errno("prefork: fork");
    }
    if (pid == 0) {
      ::close(fds[0]);
      for (auto& other : children.all())
        if (other.fd >= 0) ::close(other.fd);
      signals.reset_in_child(mask);
      PreforkChild child(i, fds[1]);
      int code = 1;
      try {
        code = child_main(child);
      } catch (const std::exception& e) {
        log::error(std::string("worker process ") + std::to_string(i) + ": " + e.what(),
                   {log::field("process", i)});
      } catch (...) {
        log::error("worker process " + std::to_string(i) + ": unknown exception",
                   {log::field("process", i)});
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);  // drain() reads until EAGAIN
    children[i] = Child{};
    children[i].pid = pid;
    children[i].fd = fds[0];
    children[i].hangup_owed = hangup_seen;
  };
  // SIGHUP now to a child that serves (its handler is up: it said ready), or
  // when it does: one that died of it before its handler was up would stop
  // the whole start.
  auto hangup = [](Child& c) {
    if (c.reaped) return;
    if (!c.serving) {
      c.hangup_owed = true;
      return;
    }
    c.hangup_owed = false;
    ::kill(c.pid, SIGHUP);
  };
  for (unsigned i = 0; i < processes; ++i) spawn(i);

  bool announced = false;
  bool aborting = false;
  bool shutting_down = false;
  // The first child that cannot become ready (it ended, or closed its pipe
  // first) stops the others.
  auto abort_start = [&] {
    if (aborting) return;
    aborting = true;
    children.signal_all(SIGTERM);
  };
  // A child that ended: restart it, or record its status.
  auto ended = [&](unsigned index, int status) {
    Child& c = children[index];
    c.reaped = true;
    if (c.fd >= 0) drain(c, result.reports[index]);  // what it wrote before it ended
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (c.ready && !shutting_down && !aborting && result.restarts < max_restarts) {
      // Died while serving: its connections are lost, but the port keeps
      // its full set of listeners. Its statistics are lost with it.
      log::warning("worker process " + std::to_string(index) + " (pid " + std::to_string(c.pid) +
                       ") ended with status " + std::to_string(code) + "; restarting it",
                   {log::field("process", index), log::field("pid", static_cast<int>(c.pid)),
                    log::field("status", code)});
      ++result.restarts;
      if (c.fd >= 0) {
        ::close(c.fd);
        c.fd = -1;  // its number may come back for the new pipe: the child must not close it
      }
      spawn(index);
      children[index].ready = true;  // announced already; do not wait again
      return;
    }
    result.exit_statuses[index] = code;
    if (code != 0) result.exit_code = 1;
    if (!c.ready) abort_start();
  };

  for (;;) {
    bool any_running = false;
    std::vector<pollfd> fds;
    std::vector<unsigned> which;
    fds.push_back({signals.read_fd(), POLLIN, 0});
    for (unsigned i = 0; i < children.size(); ++i) {
      if (children[i].reaped) continue;
      any_running = true;
      if (children[i].fd < 0) continue;  // pipe closed, process still running
      fds.push_back({children[i].fd, POLLIN, 0});
      which.push_back(i);
    }
    if (!any_running) break;
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) throw_errno("prefork: poll");
    unsigned char sig;
    while (::read(signals.read_fd(), &sig, 1) == 1) {
      if (sig == SIGCHLD) continue;  // reaped below
      if (sig == SIGHUP) {
        hangup_seen = true;
        for (auto& c : children.all()) hangup(c);
        continue;
      }
      shutting_down = true;
      children.signal_all(sig);
    }
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = children[which[k - 1]];
      drain(c, result.reports[which[k - 1]]);
      if (c.hangup_owed && c.serving) hangup(c);
      // A pipe closed before 'R' can never say ready, whether or not the
      // process lives on.
      if (c.fd < 0 && !c.ready) abort_start();
    }
    // Every child that ended, whether its pipe is open or not. WNOHANG: a
    // child that closed its pipe but runs on must not block the parent.
    for (unsigned i = 0; i < children.size(); ++i) {
      if (children[i].reaped) continue;
      int status = 0;
      const pid_t r = ::waitpid(children[i].pid, &status, WNOHANG);
      if (r == children[i].pid) ended(i, status);
    }
    if (!announced && !aborting) {
      bool all = true;
      for (auto& c : children.all()) all = all && c.ready;
      if (all) {
        announced = true;
        result.all_ready = true;
        if (on_ready) on_ready();
      }
    }
  }
  children.finished();
  if (aborting) result.exit_code = 1;
  return result;
}

}  // namespace heartwheel::runtime
