// fanout-floor: the CPU a stretch of the calling thread's work costs.
//
// thread: getrusage(RUSAGE_THREAD) user and system time (the kernel's tick
//         sampling splits the thread's exact run time between the two: only
//         long windows of one thread's work split right, see mode_thread.h)
//         and CLOCK_THREAD_CPUTIME_ID (the exact total, any window);
// process: getrusage(RUSAGE_SELF), which also takes in kernel worker threads
//         of the process (io_uring's io-wq, if a send were punted to one).
// The receivers are other processes: their reads are in none of these. The
// receiving half of loopback TCP (softirq, on the sending CPU) is charged
// to the sender as system time unless the kernel has IRQ_TIME_ACCOUNTING.
#pragma once

#include <cstdint>

namespace fanout_floor {

struct CpuSample {
  std::int64_t user_ns = 0;
  std::int64_t system_ns = 0;
  std::int64_t thread_ns = 0;   // CLOCK_THREAD_CPUTIME_ID
  std::int64_t process_ns = 0;  // RUSAGE_SELF user + system

  static CpuSample now() noexcept;
  CpuSample& operator+=(const CpuSample& o) noexcept;
  friend CpuSample operator-(CpuSample a, const CpuSample& b) noexcept;
};

// CLOCK_THREAD_CPUTIME_ID in nanoseconds: exact, cheap (a vDSO-less syscall).
std::int64_t thread_cpu_ns() noexcept;

}  // namespace fanout_floor
