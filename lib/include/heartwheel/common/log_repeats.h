// heartwheel/common/log_repeats.h - one line per reason, not one per retry:
// the same key again within `every` is counted instead of written, and the
// count goes with the next line written for that key.
//
//   log::Repeats repeats(std::chrono::seconds(60));
//   if (auto held = repeats.admit(node + ": " + reason, now))
//     log::warning("tls handshake failed: " + reason,
//                  {log::field("node", node), log::field("repeats", *held)});
//
// A Redis node that refuses every reconnect with the same error makes one
// line a minute (with how many were held back), not one per attempt.
//
// Threads: any; admit() takes a mutex (lines are rare by construction).
// Memory: one entry per distinct key ever seen; keys are meant to be few
// (a node and a reason), not a peer's address.
// Time: a parameter (steady_clock's now), so tests pass their own.
#pragma once

#include <heartwheel/common/time.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::log {

class Repeats {
 public:
  explicit Repeats(Duration every = std::chrono::seconds(60)) : every_(every) {}

  // The key's first time, or the first time `every` after its last line:
  // returns how many were held back since that line (0 the first time); the
  // caller writes its line. Otherwise counts this one and returns nullopt.
  std::optional<std::uint64_t> admit(std::string_view key,
                                     std::chrono::steady_clock::time_point now);
  std::optional<std::uint64_t> admit(std::string_view key) {
    return admit(key, std::chrono::steady_clock::now());
  }

 private:
  struct Seen {
    std::chrono::steady_clock::time_point written;
    std::uint64_t held = 0;
  };
  const Duration every_;
  std::mutex mutex_;
  std::map<std::string, Seen, std::less<>> seen_;
};

}  // namespace heartwheel::log
