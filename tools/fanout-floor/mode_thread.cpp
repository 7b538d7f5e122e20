// See mode_thread.h.
#include "mode_thread.h"

namespace fanout_floor {

ModeThread::ModeThread() : thread_([this] { loop(); }) {}

ModeThread::~ModeThread() {
  if (thread_.joinable()) finish();
}

void ModeThread::run(std::function<void()> job) {
  std::unique_lock lock(mutex_);
  job_ = std::move(job);
  cv_.notify_all();
  cv_.wait(lock, [&] { return !job_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

CpuSample ModeThread::finish() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  return life_;
}

void ModeThread::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || job_; });
    if (job_) {
      try {
        job_();
      } catch (...) {
        error_ = std::current_exception();
      }
      job_ = nullptr;
      cv_.notify_all();
      continue;
    }
    life_ = CpuSample::now();
    return;
  }
}

}  // namespace fanout_floor
