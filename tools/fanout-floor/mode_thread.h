// fanout-floor: one thread per mode, so that each mode's user and system CPU
// can be read apart. The kernel splits a thread's run time between user and
// system by sampling at each tick (CONFIG_TICK_CPU_ACCOUNTING), and
// getrusage() rescales that split on every read: deltas of short windows of
// one thread interleaving several modes would hand one mode's time to
// another. A thread per mode keeps each total whole; it is read when the
// thread ends.
//
// Threads: run() and finish() from the thread that created the object.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "measure.h"

namespace fanout_floor {

class ModeThread {
 public:
  ModeThread();
  ~ModeThread();  // finish()es
  ModeThread(const ModeThread&) = delete;
  ModeThread& operator=(const ModeThread&) = delete;

  // Runs `job` on this mode's thread and waits for it. An exception the job
  // throws is rethrown here.
  void run(std::function<void()> job);
  // Ends the thread; returns its CPU over its whole life (CpuSample::now()
  // read by the thread itself just before it ends). Once only.
  CpuSample finish();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> job_;
  std::exception_ptr error_;
  bool stop_ = false;
  CpuSample life_;
  std::thread thread_;
};

}  // namespace fanout_floor
