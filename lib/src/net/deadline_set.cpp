// See heartwheel/net/deadline_set.h.
#include <heartwheel/net/deadline_set.h>

#include <algorithm>
#include <cassert>

namespace heartwheel::net {

void DeadlineSet::start(const IdlePolicy& policy, TimePoint now, Duration jitter_offset) noexcept {
  policy_ = &policy;
  opened_ = now;
  const TimePoint anchor = deadline_after(now, std::max(jitter_offset, Duration{0}));
  read_anchor_ = write_anchor_ = all_anchor_ = anchor == kNever ? now : anchor;
  request_ = write_stall_ = kNever;
  claimed_at_.fill(kNever);
  claimed_kind_.fill(kFree);
  flags_ = kFirstRead | kFirstWrite | kFirstAll;
}

bool DeadlineSet::set(Deadline kind, TimePoint when) noexcept {
  assert(is_absolute(kind) && "idle slots and max_age follow the IdlePolicy");
  if (kind == Deadline::request_timeout) {
    request_ = when;
    return true;
  }
  if (kind == Deadline::write_stall) {
    write_stall_ = when;
    return true;
  }
  if (!is_claimed(kind)) return false;  // an idle kind or max_age (asserted above)
  // One pass: the kind's own slot if it holds one, else the first free one.
  std::size_t free = kClaimedSlots;
  for (std::size_t i = 0; i < kClaimedSlots; ++i) {
    if (claimed_kind_[i] == kind) {
      claimed_at_[i] = when;
      if (when == kNever) claimed_kind_[i] = kFree;
      return true;
    }
    if (free == kClaimedSlots && claimed_kind_[i] == kFree) free = i;
  }
  if (when == kNever) return true;  // nothing to clear
  if (free == kClaimedSlots) return false;
  claimed_kind_[free] = kind;
  claimed_at_[free] = when;
  return true;
}

TimePoint DeadlineSet::at(Deadline kind) const noexcept {
  const IdlePolicy& p = *policy_;
  switch (kind) {
    case Deadline::read_idle:
      return idle_due(read_anchor_, p.read_idle);
    case Deadline::write_idle:
      return idle_due(write_anchor_, p.write_idle);
    case Deadline::all_idle:
      return idle_due(all_anchor_, p.all_idle);
    case Deadline::max_age:
      return (flags_ & kAgeFired) != 0 ? kNever : deadline_after(opened_, p.max_age);
    case Deadline::request_timeout:
      return request_;
    case Deadline::write_stall:
      return write_stall_;
    default:
      for (std::size_t i = 0; i < kClaimedSlots; ++i)
        if (claimed_kind_[i] == kind) return claimed_at_[i];
      return kNever;
  }
}

std::size_t DeadlineSet::claimed() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(claimed_kind_.begin(), claimed_kind_.end(), [](Deadline k) { return k != kFree; }));
}

TimePoint DeadlineSet::next_deadline() const noexcept {
  const IdlePolicy& p = *policy_;
  TimePoint t =
      std::min({idle_due(read_anchor_, p.read_idle), idle_due(write_anchor_, p.write_idle),
                idle_due(all_anchor_, p.all_idle), request_, write_stall_});
  for (const TimePoint d : claimed_at_) t = std::min(t, d);  // free slots hold kNever
  if ((flags_ & kAgeFired) == 0) t = std::min(t, deadline_after(opened_, p.max_age));
  return t;
}

std::optional<DeadlineEvent> DeadlineSet::take_due(TimePoint now) noexcept {
  const IdlePolicy& p = *policy_;
  auto take_absolute = [&](TimePoint& d, Deadline kind) -> std::optional<DeadlineEvent> {
    if (now < d) return std::nullopt;
    d = kNever;  // a request stays in_request(): its owner ends it (or closes)
    return DeadlineEvent{kind, true};
  };
  auto take_idle = [&](TimePoint& anchor, Duration timeout, std::uint8_t first_flag,
                       Deadline kind) -> std::optional<DeadlineEvent> {
    if (now < idle_due(anchor, timeout)) return std::nullopt;
    const bool first = (flags_ & first_flag) != 0;
    flags_ &= static_cast<std::uint8_t>(~first_flag);
    anchor = now;  // the next event of this kind, if still idle, one timeout later
    return DeadlineEvent{kind, first};
  };
  if (auto e = take_absolute(write_stall_, Deadline::write_stall)) return e;
  if (auto e = take_idle(read_anchor_, p.read_idle, kFirstRead, Deadline::read_idle)) return e;
  if (auto e = take_idle(write_anchor_, p.write_idle, kFirstWrite, Deadline::write_idle)) return e;
  if (auto e = take_idle(all_anchor_, p.all_idle, kFirstAll, Deadline::all_idle)) return e;
  if (auto e = take_absolute(request_, Deadline::request_timeout)) return e;
  // The due claimed slot with the lowest kind number (a stable order,
  // whatever order the slots were claimed in); its slot is freed.
  std::size_t due = kClaimedSlots;
  for (std::size_t i = 0; i < kClaimedSlots; ++i) {
    if (claimed_kind_[i] == kFree || now < claimed_at_[i]) continue;
    if (due == kClaimedSlots || claimed_kind_[i] < claimed_kind_[due]) due = i;
  }
  if (due != kClaimedSlots) {
    const Deadline kind = claimed_kind_[due];
    claimed_kind_[due] = kFree;
    claimed_at_[due] = kNever;
    return DeadlineEvent{kind, true};
  }
  if ((flags_ & kAgeFired) == 0 && now >= deadline_after(opened_, p.max_age)) {
    flags_ |= kAgeFired;
    return DeadlineEvent{Deadline::max_age, true};
  }
  return std::nullopt;
}

}  // namespace heartwheel::net
