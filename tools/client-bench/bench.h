// tools/client-bench: the client side measured (see README.md). Three
// modes, one file each, each printing one JSON object:
//   calls   (calls.cpp)  RPC calls through a net::Pool at a rate, a server
//                        optionally frozen (SIGSTOP) and thawed on schedule
//   memory  (memory.cpp) N idle connections, pooled or plain Connectors
//   http    (http.cpp)   http::Client closed loop against one server
#pragma once

#include <heartwheel/common/time.h>
#include <uv.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace clientbench {

using heartwheel::Duration;
using heartwheel::TimePoint;

// The monotonic ns clock (round trips are measured on it, not on the
// loop's cached milliseconds).
inline TimePoint hr_now() noexcept { return TimePoint(std::chrono::nanoseconds(uv_hrtime())); }

// The q-quantile of `v` (sorted in place), 0 when empty.
inline double quantile(std::vector<std::int64_t>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[i]);
}

// This process's resident memory (VmRSS), KiB.
long rss_kib();
// This process's CPU time (user + system), seconds.
double cpu_seconds();

int run_calls(int argc, char** argv);
int run_memory(int argc, char** argv);
int run_http(int argc, char** argv);

}  // namespace clientbench
