// See heartwheel/net/restart.h.
#include <fcntl.h>
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/net/restart.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

extern char** environ;

namespace heartwheel::net::restart {

namespace {

constexpr const char* kListenFds = "HEARTWHEEL_LISTEN_FDS";
constexpr const char* kMetricsFd = "HEARTWHEEL_METRICS_FD";
constexpr const char* kReadyFd = "HEARTWHEEL_READY_FD";

std::atomic<bool> g_draining{false};
std::atomic<bool> g_replaced{false};

// A descriptor number in decimal, or -1.
int parse_fd(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > 1 << 20) return -1;
  return static_cast<int>(v);
}

bool valid_fd(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) >= 0; }

void set_cloexec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

Inherited read_environment() {
  Inherited in;
  if (const char* list = std::getenv(kListenFds)) {
    std::string s(list);
    std::size_t start = 0;
    while (start <= s.size()) {
      const std::size_t comma = s.find(',', start);
      const std::string item = s.substr(start, comma == std::string::npos ? comma : comma - start);
      const int fd = parse_fd(item.c_str());
      if (!valid_fd(fd)) {
        in.listeners.clear();  // all or nothing: a wrong list is no list
        break;
      }
      in.listeners.push_back(fd);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (const int fd = parse_fd(std::getenv(kMetricsFd)); valid_fd(fd)) in.metrics = fd;
  if (const int fd = parse_fd(std::getenv(kReadyFd)); valid_fd(fd)) in.ready_fd = fd;
  for (int fd : in.listeners) set_cloexec(fd);
  if (in.metrics >= 0) set_cloexec(in.metrics);
  if (in.ready_fd >= 0) set_cloexec(in.ready_fd);
  ::unsetenv(kListenFds);
  ::unsetenv(kMetricsFd);
  ::unsetenv(kReadyFd);
  return in;
}

// systemd's notification protocol (sd_notify(3)): one datagram to the unix
// socket NOTIFY_SOCKET names ('@' = the abstract namespace). The protocol
// is stable and documented for reimplementation; libsystemd would be a
// dependency for these twenty lines.
void notify_systemd(const std::string& state) noexcept {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t len = std::strlen(path);
  if (len >= sizeof addr.sun_path) return;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
  ::close(fd);
}

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

const Inherited& inherited() {
  static const Inherited in = read_environment();
  return in;
}

void announce_ready() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    const Inherited& in = inherited();
    if (in.ready_fd >= 0) {
      const char msg[] = "ready\n";
      (void)!::write(in.ready_fd, msg, sizeof msg - 1);
      ::close(in.ready_fd);
    }
    notify_systemd("MAINPID=" + std::to_string(::getpid()) + "\nREADY=1");
  });
}

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
      if (v.rfind(std::string(kListenFds) + "=", 0) == 0 ||
          v.rfind(std::string(kMetricsFd) + "=", 0) == 0 ||
          v.rfind(std::string(kReadyFd) + "=", 0) == 0)
        continue;
      env_text.emplace_back(v);
    }
    env_text.push_back(std::string(kListenFds) + "=" + fds);
    if (options.metrics >= 0)
      env_text.push_back(std::string(kMetricsFd) + "=" + std::to_string(options.metrics));
    env_text.push_back(std::string(kReadyFd) + "=" + std::to_string(pipefd[1]));
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

void set_draining() noexcept { g_draining = true; }
bool draining() noexcept { return g_draining.load(); }
void set_replaced() noexcept { g_replaced = true; }
bool replaced() noexcept { return g_replaced.load(); }

}  // namespace heartwheel::net::restart
