// See heartwheel/net/prefork.h. Parent side: one pipe per child carries
// 'R' (ready) and 'D' <8-byte length> <bytes> (report); EOF means the child
// exited. Signals reach the parent's poll() through a self-pipe.
#include <heartwheel/net/prefork.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <system_error>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace heartwheel::net {

namespace {

int g_signal_pipe[2] = {-1, -1};

extern "C" void forward_signal(int sig) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
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

struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;
  bool ready = false;
  bool exited = false;
};

// Parses what arrived so far: 'R' and complete 'D' frames.
void parse(Child& c, std::string& report) {
  for (;;) {
    if (c.buffer.empty()) return;
    if (c.buffer[0] == 'R') {
      c.ready = true;
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

}  // namespace

void PreforkChild::ready() noexcept { write_all(fd_, "R", 1); }

void PreforkChild::report(std::string_view bytes) noexcept {
  const std::uint64_t len = bytes.size();
  write_all(fd_, "D", 1);
  write_all(fd_, &len, sizeof len);
  write_all(fd_, bytes.data(), bytes.size());
}

PreforkResult run_prefork(unsigned processes, const std::function<int(PreforkChild&)>& child_main,
                          const std::function<void()>& on_ready, unsigned max_restarts) {
  PreforkResult result;
  result.reports.resize(processes);
  result.exit_statuses.resize(processes, 0);
  std::vector<Child> children(processes);
  std::fflush(nullptr);  // or buffered output is written once per process
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::system_error(errno, std::generic_category(), "prefork: pipe");

  // Forks child `i`; in the child, never returns.
  auto spawn = [&](unsigned i) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::system_error(errno, std::generic_category(), "prefork: pipe");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "prefork: fork");
    if (pid == 0) {
      ::close(fds[0]);
      for (auto& other : children)
        if (other.fd >= 0 && !other.exited) ::close(other.fd);
      ::close(g_signal_pipe[0]);
      ::close(g_signal_pipe[1]);
      ::signal(SIGTERM, SIG_DFL);
      ::signal(SIGINT, SIG_DFL);
      PreforkChild child(i, fds[1]);
      int code = 1;
      try {
        code = child_main(child);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "worker process %u: %s\n", i, e.what());
      } catch (...) {
        std::fprintf(stderr, "worker process %u: unknown exception\n", i);
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    ::close(fds[1]);
    children[i] = Child{};
    children[i].pid = pid;
    children[i].fd = fds[0];
  };
  for (unsigned i = 0; i < processes; ++i) spawn(i);

  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_term {
  }, old_int{};
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGINT, &sa, &old_int);

  auto signal_all = [&](int sig) {
    for (auto& c : children)
      if (!c.exited) ::kill(c.pid, sig);
  };

  bool announced = false;
  bool aborting = false;
  bool shutting_down = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (children[i].exited) continue;
      fds.push_back({children[i].fd, POLLIN, 0});
      which.push_back(i);
    }
    if (which.empty()) break;
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents & POLLIN) {
      unsigned char sig;
      while (::read(g_signal_pipe[0], &sig, 1) == 1) {
        shutting_down = true;
        signal_all(sig);
      }
    }
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = children[which[k - 1]];
      char buf[4096];
      const ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n > 0) {
        c.buffer.append(buf, static_cast<std::size_t>(n));
        parse(c, result.reports[which[k - 1]]);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      // EOF: the child is gone (or closed its end); reap it.
      ::close(c.fd);
      c.exited = true;
      int status = 0;
      while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      const auto index = static_cast<unsigned>(which[k - 1]);
      if (c.ready && !shutting_down && !aborting && result.restarts < max_restarts) {
        // Died while serving: its connections are lost, but the port keeps
        // its full set of listeners. Its statistics are lost with it.
        std::fprintf(stderr, "worker process %u (pid %d) ended with status %d; restarting it\n",
                     index, static_cast<int>(c.pid), code);
        ++result.restarts;
        spawn(index);
        children[index].ready = true;  // announced already; do not wait again
        continue;
      }
      result.exit_statuses[index] = code;
      if (code != 0) result.exit_code = 1;
      if (!c.ready && !aborting) {
        aborting = true;
        signal_all(SIGTERM);
      }
    }
    if (!announced && !aborting) {
      bool all = true;
      for (auto& c : children) all = all && c.ready;
      if (all) {
        announced = true;
        result.all_ready = true;
        if (on_ready) on_ready();
      }
    }
  }
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
  if (aborting) result.exit_code = 1;
  return result;
}

}  // namespace heartwheel::net
