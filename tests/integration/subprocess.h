// tests/integration/subprocess.h - start, read and stop child programs in
// loopback tests, never hanging: every wait has a timeout and a process that
// overstays it is killed by its PID.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace heartwheel::test {

struct Subprocess {
  pid_t pid = -1;
  int out_fd = -1;  // its stdout, when captured
  std::string pending;

  Subprocess() = default;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess() { kill_and_reap(); }

  // Starts argv[0] (a path) with stdout on a pipe (capture) or inherited.
  // Throws std::runtime_error if it cannot be started.
  void start(const std::vector<std::string>& argv, bool capture_stdout) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    int fds[2] = {-1, -1};
    if (capture_stdout) {
      if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
      posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    }
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (capture_stdout) {
      ::close(fds[1]);
      out_fd = fds[0];
    }
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::to_string(rc));
  }

  // The next line of its stdout, or nullopt on EOF or after `timeout`.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto nl = pending.find('\n');
      if (nl != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{out_fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(out_fd, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      pending.append(buf, static_cast<std::size_t>(n));
    }
  }

  // Its exit status (WEXITSTATUS) if it exits within `timeout`; otherwise
  // it is killed and nullopt returned. A death by signal returns 128 + signal.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (pid > 0) {
      int status = 0;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill_and_reap();
    return std::nullopt;
  }

  void signal(int sig) const {
    if (pid > 0) ::kill(pid, sig);
  }

  void kill_and_reap() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
    if (out_fd >= 0) {
      ::close(out_fd);
      out_fd = -1;
    }
  }
};

}  // namespace heartwheel::test
