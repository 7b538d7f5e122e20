// See heartwheel/net/pool_health.h.
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/net/pool_health.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace heartwheel::net {

const char* to_string(EndpointState state) noexcept {
  switch (state) {
    case EndpointState::warming:
      return "warming";
    case EndpointState::healthy:
      return "healthy";
    case EndpointState::ejected:
      return "ejected";
    case EndpointState::probing:
      return "probing";
    case EndpointState::draining:
      return "draining";
  }
  return "unknown";
}

void OutlierOptions::validate() const {
  if (base_ejection_time.count() <= 0)
    throw std::invalid_argument("pool: base_ejection_time must be positive (got " +
                                format_duration(base_ejection_time) + ")");
  if (max_ejection_time < base_ejection_time)
    throw std::invalid_argument("pool: max_ejection_time " + format_duration(max_ejection_time) +
                                " is under base_ejection_time " +
                                format_duration(base_ejection_time));
  if (max_ejection_percent > 100)
    throw std::invalid_argument("pool: max_ejection_percent is a share, 0 to 100 (got " +
                                std::to_string(max_ejection_percent) + ")");
  if (probe_timeout.count() <= 0)
    throw std::invalid_argument("pool: probe_timeout must be positive");
}

Duration OutlierOptions::ejection_time(unsigned ejections) const noexcept {
  const unsigned n = std::max(1u, ejections);
  // Compared before multiplying: a large multiplier must not overflow.
  if (base_ejection_time.count() > max_ejection_time.count() / static_cast<Duration::rep>(n))
    return max_ejection_time;
  return std::min(max_ejection_time, base_ejection_time * n);
}

std::size_t OutlierOptions::ejection_cap(std::size_t endpoints) const noexcept {
  if (endpoints <= 1) return 0;
  return std::min(endpoints - 1, std::max<std::size_t>(1, endpoints * max_ejection_percent / 100));
}

TimePoint EndpointHealth::eject(TimePoint now, const OutlierOptions& o) noexcept {
  // Decay: one step down for every base period healthy since re-admission.
  if (ejections_ > 0 && healthy_since_ != kNever && now > healthy_since_) {
    const auto steps = static_cast<std::uint64_t>((now - healthy_since_) / o.base_ejection_time);
    ejections_ = steps >= ejections_ ? 0 : ejections_ - static_cast<unsigned>(steps);
  }
  healthy_since_ = kNever;
  ++ejections_;
  state_ = EndpointState::ejected;
  trial_out_ = false;
  consecutive_ = 0;
  until_ = deadline_after(now, o.ejection_time(ejections_));
  return until_;
}

void EndpointHealth::readmit(TimePoint now) noexcept {
  state_ = EndpointState::healthy;
  trial_out_ = false;
  consecutive_ = 0;
  healthy_since_ = now;
}

}  // namespace heartwheel::net
