// See heartwheel/net/heartbeat.h.
#include <heartwheel/net/heartbeat.h>

#include <stdexcept>
#include <string>

#include <heartwheel/common/duration_parse.h>

namespace heartwheel::net {

void HeartbeatConfig::validate() const {
  if (interval.count() <= 0)
    throw std::invalid_argument("heartbeat: interval must be positive (got " +
                                format_duration(interval) + ")");
  if (jitter < 0 || jitter > 1)
    throw std::invalid_argument("heartbeat: jitter is a fraction of the interval, between 0 and 1");
  const Duration t = effective_timeout();
  if (t < 2 * interval)
    throw std::invalid_argument(
        "heartbeat: timeout " + format_duration(t) + " is under twice the interval " +
        format_duration(interval) +
        ": one lost ping would close a healthy connection; use a timeout of at "
        "least " +
        format_duration(2 * interval) + " (Dubbo uses 3x)");
}

}  // namespace heartwheel::net
