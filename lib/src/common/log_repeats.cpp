// See heartwheel/common/log_repeats.h.
#include <heartwheel/common/log_repeats.h>

namespace heartwheel::log {

std::optional<std::uint64_t> Repeats::admit(std::string_view key,
                                            std::chrono::steady_clock::time_point now) {
  const std::lock_guard lock(mutex_);
  auto it = seen_.find(key);
  if (it == seen_.end()) {
    seen_.emplace(std::string(key), Seen{now, 0});
    return 0;
  }
  Seen& s = it->second;
  if (now - s.written < every_) {
    ++s.held;
    return std::nullopt;
  }
  const std::uint64_t held = s.held;
  s = {now, 0};
  return held;
}

}  // namespace heartwheel::log
