// See heartwheel/runtime/successor.h. The successor's side (reading what
// it inherited, saying "ready") is net's: heartwheel/net/restart.h.
#include <fcntl.h>
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/net/restart.h>
#include <heartwheel/runtime/successor.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace heartwheel::runtime {

namespace {

// The executable's path: /proc/self/exe, without the " (deleted)" the kernel
// adds once a new build replaced the file (the new build is the point).
std::string executable_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<std::size_t>(n));
  const std::string deleted = " (deleted)";
  if (path.size() > deleted.size() &&
      path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
    path.resize(path.size() - deleted.size());
  return path;
}

std::vector<std::string> command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::size_t start = 0;
  while (start < all.size()) {
    const std::size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return args;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace

Successor start_successor(const SuccessorOptions& options) noexcept {
  Successor result;
  try {
    const std::string exe = executable_path();
    const std::vector<std::string> args = command_line();
    if (exe.empty() || args.empty()) {
      result.error = "cannot read /proc/self/exe or /proc/self/cmdline";
      return result;
    }
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) {
      result.error = std::string("pipe: ") + std::strerror(errno);
      return result;
    }
    // Everything the child needs is made before fork: between fork and exec
    // only async-signal-safe calls (the other threads' locks are not ours).
    std::string fds;
    for (int fd : options.listeners) fds += (fds.empty() ? "" : ",") + std::to_string(fd);
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view v(*e);
      if (v.rfind(std::string(net::restart::kListenFdsVariable) + "=", 0) == 0 ||
          v.rfind(std::string(net::restart::kMetricsFdVariable) + "=", 0) == 0 ||
          v.rfind(std::string(net::restart::kReadyFdVariable) + "=", 0) == 0)
        continue;
      env_text.emplace_back(v);
    }
    env_text.push_back(std::string(net::restart::kListenFdsVariable) + "=" + fds);
    if (options.metrics >= 0)
      env_text.push_back(std::string(net::restart::kMetricsFdVariable) + "=" +
                         std::to_string(options.metrics));
    env_text.push_back(std::string(net::restart::kReadyFdVariable) + "=" +
                       std::to_string(pipefd[1]));
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<int> keep = options.listeners;
    if (options.metrics >= 0) keep.push_back(options.metrics);
    keep.push_back(pipefd[1]);

    const pid_t pid = ::fork();
    if (pid < 0) {
      result.error = std::string("fork: ") + std::strerror(errno);
      ::close(pipefd[0]);
      ::close(pipefd[1]);
      return result;
    }
    if (pid == 0) {
      // The child: a fresh signal mask (the parent's threads may block some),
      // the handed-over descriptors kept open across exec, then exec.
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int fd : keep) {
        const int flags = ::fcntl(fd, F_GETFD);
        if (flags >= 0) ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
      }
      ::execve(exe.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(pipefd[1]);
    result.pid = pid;

    // Wait for "ready", or for the pipe to close (it exited: exec failed, a
    // usage error, cannot listen) or the time to run out.
    const auto deadline = std::chrono::steady_clock::now() + options.ready_timeout;
    std::string got;
    bool ended = false;
    while (got.find('\n') == std::string::npos && !ended) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) break;
      pollfd p{pipefd[0], POLLIN, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) continue;
      char buf[64];
      const ssize_t n = ::read(pipefd[0], buf, sizeof buf);
      if (n > 0)
        got.append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR)
        ended = true;
    }
    ::close(pipefd[0]);
    if (got.rfind("ready\n", 0) == 0) return result;

    int status = 0;
    if (ended) {
      // Its pipe closed: it is ending; give it a moment to be reaped with
      // its own status (a usage error says 2, a failed listen 1).
      for (int i = 0; i < 500; ++i) {
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          result.error = describe(status);
          return result;
        }
        ::usleep(10000);
      }
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    result.error = ended ? "closed its ready pipe without saying ready"
                         : "did not listen within " + format_duration(options.ready_timeout);
    return result;
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
}

}  // namespace heartwheel::runtime
