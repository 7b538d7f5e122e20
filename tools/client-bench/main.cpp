// heartwheel-client-bench MODE [flags]: the client side measured. See
// README.md in this folder (the modes, the driver run.py, what each prints).
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "bench.h"

namespace clientbench {

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

}  // namespace clientbench

int main(int argc, char** argv) {
  const char* usage =
      "Usage: heartwheel-client-bench calls|memory|http [flags]  (MODE --help: its flags)\n"
      "  calls   RPC calls through a net::Pool; optionally a server frozen (failover)\n"
      "  memory  RSS per idle connection: a pool's or a plain net::Connector's\n"
      "  http    http::Client in a closed loop against one server\n"
      "Each prints one JSON object. Exit status: 0 ok, 1 runtime failure, 2 usage error.\n";
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "--help" || mode == "-h") {
    std::fputs(usage, stdout);
    return 0;
  }
  if (mode == "calls") return clientbench::run_calls(argc - 1, argv + 1);
  if (mode == "memory") return clientbench::run_memory(argc - 1, argv + 1);
  if (mode == "http") return clientbench::run_http(argc - 1, argv + 1);
  std::fprintf(stderr, "heartwheel-client-bench: error: %s (see heartwheel-client-bench --help)\n",
               mode.empty() ? "give a mode: calls, memory or http"
                            : ("unknown mode '" + mode + "'").c_str());
  return 2;
}
