// Helpers for tests that run the built programs: spawn a child with its
// stdout on a pipe, wait for a line, signal it by PID, reap it with a time
// limit; blocking loopback sockets with time limits; a temp directory; and a
// watchdog that kills every child and fails the run if a test hangs.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace hwproc {

using Ms = std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

inline SteadyTime now() { return std::chrono::steady_clock::now(); }
inline long long ms_since(SteadyTime t) {
  return std::chrono::duration_cast<Ms>(now() - t).count();
}
void sleep_for(Ms d);

// How to start a Child beyond its argv.
struct ChildOptions {
  bool capture_stderr = false;   // stderr to a second pipe, read into errors()
  std::vector<std::string> env;  // extra NAME=VALUE entries on top of ours
};

// A child process. The destructor kills (SIGKILL) and reaps it if it is still
// running, so no test leaves a process behind.
class Child {
 public:
  // Starts `argv[0]` with `argv`; stdout goes to a pipe we read, stderr is
  // inherited unless options.capture_stderr. FAILs the test if the program
  // cannot be started.
  explicit Child(std::vector<std::string> argv, ChildOptions options = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Reads stdout until a line starting with `prefix` arrived; returns that
  // line, or nullopt after `limit` or at EOF.
  std::optional<std::string> wait_for_line(const std::string& prefix, Ms limit);
  // "listening on 127.0.0.1:PORT" -> PORT, or 0 if it did not come in `limit`.
  int wait_listening(Ms limit = Ms(5000));
  // The same for "metrics on 127.0.0.1:PORT", the line a server started with
  // --metrics-listen 127.0.0.1:0 prints after "listening on".
  int wait_metrics(Ms limit = Ms(5000));
  void signal(int sig);
  // Waits for the exit (reading stdout meanwhile). Returns the exit status
  // (128 + signal when killed), or nullopt if it is still running at `limit`.
  std::optional<int> wait_exit(Ms limit);
  const std::string& output() const { return out_; }
  // What it wrote on stderr so far (with capture_stderr only).
  const std::string& errors() const { return err_; }

 private:
  bool read_some(Ms limit);  // false when nothing arrived and no pipe ended within `limit`
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  std::size_t scanned_ = 0;
  bool exited_ = false;
};

// Kills every live Child and aborts the test binary if not disarmed within
// `limit` (a hung test must not hang the suite).
class Watchdog {
 public:
  explicit Watchdog(Ms limit);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  struct State;
  State* state_;
};

// A fresh directory under $TMPDIR (or /tmp), removed with its files.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// One sample of a GET /metrics on loopback `port` (Prometheus text format):
// `sample` is the metric's name with its labels as the text writes them
// (`x_total{type="request"}`). Its value, or nullopt when the scrape has no
// such sample or failed.
std::optional<double> scrape(int port, const std::string& sample);

// Loopback ports the kernel hands out now (bound together, then released),
// for servers that cannot listen on port 0 and say which port they got
// (HAProxy, nginx).
std::vector<int> free_ports(int n);
// True when something accepts a TCP connection on loopback `port` now.
bool accepts(int port);

// Reads a whole file ("" if missing).
std::string read_file(const std::string& path);

// At scope exit SIGKILLs the process `pid_file` names, unless that is
// `original` (or the file is empty): the successor a server's SIGUSR2
// restart started is its child, not ours, so no Child reaps it.
class SuccessorGuard {
 public:
  SuccessorGuard(std::string pid_file, pid_t original)
      : pid_file_(std::move(pid_file)), original_(original) {}
  ~SuccessorGuard();
  SuccessorGuard(const SuccessorGuard&) = delete;
  SuccessorGuard& operator=(const SuccessorGuard&) = delete;

 private:
  std::string pid_file_;
  pid_t original_;
};

// Blocking loopback TCP client.
class RawSocket {
 public:
  explicit RawSocket(int port);  // FAILs the test if it cannot connect
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  void send(const std::string& bytes);
  // Appends what arrives within `limit` to received(); stops early at EOF or
  // once `until` returns true for the bytes so far. Returns true at EOF.
  bool read_for(Ms limit, bool (*until)(const std::string&) = nullptr);
  bool eof() const { return eof_; }
  // When EOF (or a reset) was seen.
  SteadyTime eof_at() const { return eof_at_; }
  const std::string& received() const { return in_; }

 private:
  int fd_ = -1;
  std::string in_;
  bool eof_ = false;
  SteadyTime eof_at_{};
};

}  // namespace hwproc
