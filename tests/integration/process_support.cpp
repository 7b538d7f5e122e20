// See process_support.h.
#include "process_support.h"

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace hwproc {

namespace {
std::mutex live_mu;
std::set<pid_t> live;  // children not reaped yet, for the watchdog

int remaining_ms(SteadyTime end) {
  const auto left = std::chrono::duration_cast<Ms>(end - now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}
}  // namespace

void sleep_for(Ms d) { std::this_thread::sleep_for(d); }

Child::Child(std::vector<std::string> argv, ChildOptions options) {
  int fds[2], err[2] = {-1, -1};
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  if (options.capture_stderr) REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (options.capture_stderr) posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  for (auto& e : options.env) env.push_back(e.data());
  env.push_back(nullptr);
  std::lock_guard lock(live_mu);
  const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  out_fd_ = fds[0];
  if (options.capture_stderr) {
    ::close(err[1]);
    err_fd_ = err[0];
  }
  if (rc != 0) {
    ::close(out_fd_);
    if (err_fd_ >= 0) ::close(err_fd_);
    FAIL("cannot start " << argv[0] << ": " << std::strerror(rc));
  }
  live.insert(pid_);
}

Child::~Child() {
  if (!exited_) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
    std::lock_guard lock(live_mu);
    live.erase(pid_);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool Child::read_some(Ms limit) {
  pollfd p[2];
  int n = 0;
  for (int fd : {out_fd_, err_fd_})
    if (fd >= 0) p[n++] = {fd, POLLIN, 0};
  if (n == 0 || ::poll(p, static_cast<nfds_t>(n), static_cast<int>(limit.count())) <= 0)
    return false;
  bool progress = false;  // bytes read or a pipe reached EOF
  for (int i = 0; i < n; ++i) {
    if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const bool is_out = p[i].fd == out_fd_;
    char buf[4096];
    const ssize_t r = ::read(p[i].fd, buf, sizeof buf);
    progress = true;
    if (r <= 0) {
      ::close(p[i].fd);
      (is_out ? out_fd_ : err_fd_) = -1;
      continue;
    }
    (is_out ? out_ : err_).append(buf, static_cast<std::size_t>(r));
  }
  return progress;
}

std::optional<std::string> Child::wait_for_line(const std::string& prefix, Ms limit) {
  const auto end = now() + limit;
  for (;;) {
    for (std::size_t nl; (nl = out_.find('\n', scanned_)) != std::string::npos; scanned_ = nl + 1) {
      const std::string line = out_.substr(scanned_, nl - scanned_);
      if (line.rfind(prefix, 0) == 0) {
        scanned_ = nl + 1;
        return line;
      }
    }
    if (now() >= end || (!read_some(Ms(remaining_ms(end))) && out_fd_ < 0)) return std::nullopt;
  }
}

int Child::wait_listening(Ms limit) {
  const auto line = wait_for_line("listening on ", limit);
  if (!line) return 0;
  return std::atoi(line->substr(line->rfind(':') + 1).c_str());
}

int Child::wait_metrics(Ms limit) {
  const auto line = wait_for_line("metrics on ", limit);
  if (!line) return 0;
  return std::atoi(line->substr(line->rfind(':') + 1).c_str());
}

void Child::signal(int sig) {
  if (!exited_) ::kill(pid_, sig);
}

std::optional<int> Child::wait_exit(Ms limit) {
  const auto end = now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      {
        std::lock_guard lock(live_mu);
        live.erase(pid_);
      }
      while (read_some(Ms(0))) {
      }
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (now() >= end) return std::nullopt;
    if (!read_some(Ms(std::min(20, remaining_ms(end))))) sleep_for(Ms(std::min(5, remaining_ms(end))));
  }
}

struct Watchdog::State {
  std::mutex mu;
  std::condition_variable cv;
  bool disarmed = false;
  std::thread thread;
};

Watchdog::Watchdog(Ms limit) : state_(new State) {
  state_->thread = std::thread([s = state_, limit] {
    std::unique_lock lock(s->mu);
    if (s->cv.wait_for(lock, limit, [s] { return s->disarmed; })) return;
    std::fprintf(stderr, "watchdog: test still running after %lld ms; killing children\n",
                 static_cast<long long>(limit.count()));
    {
      std::lock_guard l(live_mu);
      for (pid_t p : live) ::kill(p, SIGKILL);
    }
    std::abort();
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(state_->mu);
    state_->disarmed = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
  delete state_;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/heartwheel-rpc-XXXXXX";
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::optional<double> scrape(int port, const std::string& sample) {
  RawSocket s(port);
  s.send("GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
  s.read_for(Ms(5000));
  const std::string& text = s.received();
  const auto at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text.c_str() + at + sample.size() + 2, nullptr);
}

std::vector<int> free_ports(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    fds.push_back(fd);
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SuccessorGuard::~SuccessorGuard() {
  const std::string text = read_file(pid_file_);
  const pid_t pid = text.empty() ? 0 : static_cast<pid_t>(std::atol(text.c_str()));
  if (pid > 0 && pid != original_) ::kill(pid, SIGKILL);
}

RawSocket::RawSocket(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd_ >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
}

RawSocket::~RawSocket() {
  if (fd_ >= 0) ::close(fd_);
}

void RawSocket::send(const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    REQUIRE(n > 0);
    off += static_cast<std::size_t>(n);
  }
}

bool RawSocket::read_for(Ms limit, bool (*until)(const std::string&)) {
  const auto end = now() + limit;
  while (!eof_ && !(until && until(in_))) {
    pollfd p{fd_, POLLIN, 0};
    const int left = remaining_ms(end);
    if (::poll(&p, 1, left) <= 0) break;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      eof_at_ = now();
      break;
    }
    in_.append(buf, static_cast<std::size_t>(n));
    if (left == 0) break;
  }
  return eof_;
}

}  // namespace hwproc
