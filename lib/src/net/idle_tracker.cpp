// See heartwheel/net/idle_tracker.h.
#include <heartwheel/net/idle_tracker.h>

#include <algorithm>

namespace heartwheel::net {

namespace {
// anchor + timeout, or kNever when the check is off.
TimePoint due(TimePoint anchor, Duration timeout) noexcept {
  return timeout.count() > 0 ? anchor + timeout : IdleTracker::kNever;
}
}  // namespace

void IdleTracker::start(const IdlePolicy& policy, TimePoint now, Duration jitter_offset) noexcept {
  policy_ = &policy;
  opened_ = now;
  const TimePoint anchor = now + std::max(jitter_offset, Duration{0});
  read_anchor_ = write_anchor_ = all_anchor_ = anchor;
  request_deadline_ = kNever;
  check_deadline_ = kNever;
  flags_ = kFirstRead | kFirstWrite | kFirstAll;
}

TimePoint IdleTracker::next_deadline() const noexcept {
  const IdlePolicy& p = *policy_;
  TimePoint t = std::min({due(read_anchor_, p.read_idle), due(write_anchor_, p.write_idle),
                          due(all_anchor_, p.all_idle), request_deadline_, check_deadline_});
  if ((flags_ & kAgeFired) == 0) t = std::min(t, due(opened_, p.max_age));
  return t;
}

std::optional<IdleEvent> IdleTracker::take_due(TimePoint now) noexcept {
  const IdlePolicy& p = *policy_;
  auto take = [&](TimePoint& anchor, Duration timeout, std::uint8_t first_flag,
                  IdleKind kind) -> std::optional<IdleEvent> {
    if (timeout.count() <= 0 || now < anchor + timeout) return std::nullopt;
    const bool first = (flags_ & first_flag) != 0;
    flags_ &= static_cast<std::uint8_t>(~first_flag);
    anchor = now;  // the next event of this kind, if still idle, one timeout later
    return IdleEvent{kind, first};
  };
  if (auto e = take(read_anchor_, p.read_idle, kFirstRead, IdleKind::read_idle)) return e;
  if (auto e = take(write_anchor_, p.write_idle, kFirstWrite, IdleKind::write_idle)) return e;
  if (auto e = take(all_anchor_, p.all_idle, kFirstAll, IdleKind::all_idle)) return e;
  if (now >= request_deadline_) {
    request_deadline_ = kNever;  // still in_request(): the handler ends it (or closes)
    return IdleEvent{IdleKind::request_timeout, true};
  }
  if ((flags_ & kAgeFired) == 0 && p.max_age.count() > 0 && now >= opened_ + p.max_age) {
    flags_ |= kAgeFired;
    return IdleEvent{IdleKind::max_age, true};
  }
  return std::nullopt;
}

}  // namespace heartwheel::net
