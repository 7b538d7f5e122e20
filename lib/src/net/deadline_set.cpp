// See heartwheel/net/deadline_set.h.
#include <heartwheel/net/deadline_set.h>

#include <algorithm>

namespace heartwheel::net {

void DeadlineSet::start(const IdlePolicy& policy, TimePoint now, Duration jitter_offset) noexcept {
  policy_ = &policy;
  opened_ = now;
  const TimePoint anchor = deadline_after(now, std::max(jitter_offset, Duration{0}));
  read_anchor_ = write_anchor_ = all_anchor_ = anchor == kNever ? now : anchor;
  abs_.fill(kNever);
  flags_ = kFirstRead | kFirstWrite | kFirstAll;
}

TimePoint DeadlineSet::at(Deadline slot) const noexcept {
  const IdlePolicy& p = *policy_;
  switch (slot) {
    case Deadline::read_idle:
      return idle_due(read_anchor_, p.read_idle);
    case Deadline::write_idle:
      return idle_due(write_anchor_, p.write_idle);
    case Deadline::all_idle:
      return idle_due(all_anchor_, p.all_idle);
    case Deadline::max_age:
      return (flags_ & kAgeFired) != 0 ? kNever : deadline_after(opened_, p.max_age);
    default:
      return abs_[index(slot)];
  }
}

TimePoint DeadlineSet::next_deadline() const noexcept {
  const IdlePolicy& p = *policy_;
  TimePoint t =
      std::min({idle_due(read_anchor_, p.read_idle), idle_due(write_anchor_, p.write_idle),
                idle_due(all_anchor_, p.all_idle)});
  for (const TimePoint d : abs_) t = std::min(t, d);
  if ((flags_ & kAgeFired) == 0) t = std::min(t, deadline_after(opened_, p.max_age));
  return t;
}

std::optional<DeadlineEvent> DeadlineSet::take_due(TimePoint now) noexcept {
  const IdlePolicy& p = *policy_;
  auto take_absolute = [&](Deadline slot) -> std::optional<DeadlineEvent> {
    TimePoint& d = abs_[index(slot)];
    if (now < d) return std::nullopt;
    d = kNever;  // a request stays in_request(): its owner ends it (or closes)
    return DeadlineEvent{slot, true};
  };
  auto take_idle = [&](TimePoint& anchor, Duration timeout, std::uint8_t first_flag,
                       Deadline slot) -> std::optional<DeadlineEvent> {
    if (now < idle_due(anchor, timeout)) return std::nullopt;
    const bool first = (flags_ & first_flag) != 0;
    flags_ &= static_cast<std::uint8_t>(~first_flag);
    anchor = now;  // the next event of this kind, if still idle, one timeout later
    return DeadlineEvent{slot, first};
  };
  if (auto e = take_absolute(Deadline::write_stall)) return e;
  if (auto e = take_idle(read_anchor_, p.read_idle, kFirstRead, Deadline::read_idle)) return e;
  if (auto e = take_idle(write_anchor_, p.write_idle, kFirstWrite, Deadline::write_idle)) return e;
  if (auto e = take_idle(all_anchor_, p.all_idle, kFirstAll, Deadline::all_idle)) return e;
  if (auto e = take_absolute(Deadline::request_timeout)) return e;
  for (auto slot = static_cast<std::uint8_t>(Deadline::header_timeout);
       slot < static_cast<std::uint8_t>(Deadline::write_stall); ++slot) {
    if (auto e = take_absolute(static_cast<Deadline>(slot))) return e;
  }
  if ((flags_ & kAgeFired) == 0 && now >= deadline_after(opened_, p.max_age)) {
    flags_ |= kAgeFired;
    return DeadlineEvent{Deadline::max_age, true};
  }
  return std::nullopt;
}

}  // namespace heartwheel::net
