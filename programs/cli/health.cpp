// See health.h.
#include "health.h"

#include <heartwheel/net/restart.h>
#include <unistd.h>

#include <utility>

#include "cli_program.h"

namespace heartwheel::cli {

namespace {
std::string& pid_file() {
  static std::string path;
  return path;
}
}  // namespace

std::function<std::string()> readiness(std::function<bool()> redis_up) {
  return [redis_up = std::move(redis_up)]() -> std::string {
    if (net::restart::draining()) return "draining";
    if (redis_up && !redis_up()) return "redis unreachable";
    return {};
  };
}

void set_pid_file(std::string path) { pid_file() = std::move(path); }

void write_pid_file() {
  if (pid_file().empty()) return;
  write_file_atomically(pid_file(), std::to_string(::getpid()) + "\n");
}

}  // namespace heartwheel::cli
