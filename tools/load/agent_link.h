// tools/load/agent_link.h - the wire between a coordinator and its agents.
//
// One TCP connection per agent, JSON objects one per line both ways
// (README "Across hosts" lists the messages). Blocking sockets driven by
// poll(2): the coordinator and the agent's parent process never run a
// libuv loop (the agent forks its supervisor, which forks the workers).
// Threads: one. Errors: the functions that set up a connection throw
// std::runtime_error with a message that names the address and the cause.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace heartwheel::load {

// A listening socket on "HOST:PORT" (IPv4 literal; port 0 picks one).
int listen_on(const std::string& host_port);
// The port a socket is bound to.
unsigned bound_port(int fd);
// Connects to "HOST:PORT", retrying every 200 ms for up to `wait` (the
// other side may still be starting).
int connect_to(const std::string& host_port, std::chrono::milliseconds wait);
// Accepts one connection within `wait`; -1 if none came.
int accept_within(int listen_fd, std::chrono::milliseconds wait);
// "HOST:PORT" of the peer.
std::string peer_name(int fd);

// CLOCK_MONOTONIC in ns (uv_hrtime()'s clock): the clock a ws run's stamps
// are read on; the coordinator measures each agent's against its own.
std::uint64_t monotonic_ns();

// `argv` without the flags named: each of `with_value` together with its
// value ("--x V", "--x=V", "-x V", "-xV"), each of `bare` alone. The
// coordinator forwards its own command line to the agents this way, minus
// what only it uses and what it sets per agent.
std::vector<std::string> without_flags(const std::vector<std::string>& argv,
                                       const std::vector<std::string>& with_value,
                                       const std::vector<std::string>& bare);

class LineLink {
 public:
  explicit LineLink(int fd) : fd_(fd) {}
  ~LineLink();
  LineLink(LineLink&& other) noexcept;
  LineLink& operator=(LineLink&&) = delete;
  LineLink(const LineLink&) = delete;

  int fd() const noexcept { return fd_; }
  bool open() const noexcept { return fd_ >= 0; }
  // Writes one message (blocking); false if the connection is gone.
  bool send(const nlohmann::json& message);
  // Reads what the socket has (call when poll says readable); false at EOF
  // or on an error (the link is then closed).
  bool receive();
  // The next complete message read, if any; a line that is not JSON is
  // skipped (and counted in bad_lines).
  std::optional<nlohmann::json> next();
  // Waits up to `wait` for the next message; nullopt on timeout or EOF.
  std::optional<nlohmann::json> wait_message(std::chrono::milliseconds wait);
  void close();
  unsigned bad_lines() const noexcept { return bad_lines_; }

 private:
  int fd_;
  std::string in_;
  unsigned bad_lines_ = 0;
};

}  // namespace heartwheel::load
