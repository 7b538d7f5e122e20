// DelayedQueueOptions::validate. See heartwheel/push/delayed_queue.h.
#include <heartwheel/push/delayed_queue.h>

#include <stdexcept>

namespace heartwheel::push {

void DelayedQueueOptions::validate() const {
  auto positive = [](Duration d, const char* name) {
    if (d <= Duration{0})
      throw std::invalid_argument(std::string("DelayedQueueOptions::") + name +
                                  " must be positive");
  };
  if (key_prefix.empty())
    throw std::invalid_argument("DelayedQueueOptions::key_prefix must not be empty");
  if (key_prefix.find_first_of("{}") != std::string::npos)
    throw std::invalid_argument("DelayedQueueOptions::key_prefix must not contain braces");
  if (partitions < 1 || partitions > redis::kSlotCount)
    throw std::invalid_argument("DelayedQueueOptions::partitions must be 1..16384");
  positive(window, "window");
  positive(load_interval, "load_interval");
  positive(lease, "lease");
  positive(reap_interval, "reap_interval");
  positive(retry_interval, "retry_interval");
  if (takeover_grace < Duration{0})
    throw std::invalid_argument("DelayedQueueOptions::takeover_grace must not be negative");
  if (load_interval > window)
    throw std::invalid_argument(
        "DelayedQueueOptions::load_interval must not be longer than window (pushes would come "
        "due before they are loaded)");
  if (load_batch == 0)
    throw std::invalid_argument("DelayedQueueOptions::load_batch must be positive");
}

}  // namespace heartwheel::push
