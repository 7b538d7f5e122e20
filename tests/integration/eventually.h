// eventually(): a bounded wait on a condition, for tests that wait for
// another thread or process. Polling the condition itself ends the wait as
// soon as it holds (an idle machine does not pay for a loaded one's margin)
// and still ends on a hung peer; a fixed sleep is too short under load and
// too long otherwise.
#pragma once

#include <chrono>
#include <thread>

namespace hwtest {

// Calls `done` every `every` until it returns true or `limit` has passed
// (steady clock). Returns whether it held; `done` runs on the calling thread.
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds limit = std::chrono::seconds(5),
                std::chrono::milliseconds every = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace hwtest
