// See measure.h.
#include "measure.h"

#include <sys/resource.h>
#include <time.h>

namespace fanout_floor {

namespace {

std::int64_t ns(const timeval& t) noexcept {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 +
         static_cast<std::int64_t>(t.tv_usec) * 1000;
}

}  // namespace

std::int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

CpuSample CpuSample::now() noexcept {
  CpuSample s;
  rusage thread{}, self{};
  getrusage(RUSAGE_THREAD, &thread);
  getrusage(RUSAGE_SELF, &self);
  s.user_ns = ns(thread.ru_utime);
  s.system_ns = ns(thread.ru_stime);
  s.thread_ns = thread_cpu_ns();
  s.process_ns = ns(self.ru_utime) + ns(self.ru_stime);
  return s;
}

CpuSample& CpuSample::operator+=(const CpuSample& o) noexcept {
  user_ns += o.user_ns;
  system_ns += o.system_ns;
  thread_ns += o.thread_ns;
  process_ns += o.process_ns;
  return *this;
}

CpuSample operator-(CpuSample a, const CpuSample& b) noexcept {
  a.user_ns -= b.user_ns;
  a.system_ns -= b.system_ns;
  a.thread_ns -= b.thread_ns;
  a.process_ns -= b.process_ns;
  return a;
}

}  // namespace fanout_floor
