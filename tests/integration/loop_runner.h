// run_loop_until(): turns a test's own libuv loop until a condition holds
// or a time limit passes (tests that drive library clients in-process).
#pragma once

#include <uv.h>

#include <chrono>
#include <thread>

namespace hwtest {

// Runs `loop` (without blocking in it: a turn, then a millisecond's sleep
// when the condition does not hold yet) until `done()` or `limit`. Returns
// whether it held.
template <class Pred>
bool run_loop_until(uv_loop_t& loop, Pred done, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    uv_run(&loop, UV_RUN_NOWAIT);
    if (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace hwtest
