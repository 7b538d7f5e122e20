// See heartwheel/net/detail/deadline_set.h.
#include <heartwheel/net/detail/deadline_set.h>

#include <algorithm>
#include <cassert>

namespace heartwheel::net::detail {

namespace {
constexpr std::uint64_t kNeverTicks = TickScale::kNeverTicks;
}

void DeadlineSet::start(const IdlePolicy& policy, TimePoint now, const TickScale& scale,
                        Duration jitter_offset) noexcept {
  policy_ = &policy;
  opened_ = std::min(scale.ceil(now), kOpenedMax);
  epoch_ = 0;
  const TimePoint jittered = deadline_after(now, std::max(jitter_offset, Duration{0}));
  const std::uint64_t anchor = jittered == kNever ? opened_ : scale.ceil(jittered);
  // A jitter past what an offset holds is cut short: still no earlier.
  read_ = write_ = all_ =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(anchor - opened_, 3 * kRebaseStep));
  request_ = write_stall_ = kNeverOffset;
  claimed_at_.fill(kNeverOffset);
  claimed_kind_.fill(kFree);
  flags_ = (flags_ & kOwnerFlags) | kFirstRead | kFirstWrite | kFirstAll;
}

std::uint32_t DeadlineSet::encode(std::uint64_t ticks) const noexcept {
  if (ticks == kNeverTicks) return kNeverOffset;
  const std::uint64_t b = base();
  if (ticks <= b) return 0;  // already passed: due
  const std::uint64_t off = ticks - b;
  if (off < kFarFirst) return static_cast<std::uint32_t>(off);
  // Far: rounded up to 2^kFarShift ticks (never early), clamped to the last
  // far value (2^48 ticks on, as the wheel clamps).
  const std::uint64_t far = (off - kFarFirst + (std::uint64_t{1} << kFarShift) - 1) >> kFarShift;
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(kFarFirst + far, kNeverOffset - 1));
}

std::uint64_t DeadlineSet::decode(std::uint32_t offset) const noexcept {
  if (offset == kNeverOffset) return kNeverTicks;
  if (offset < kFarFirst) return base() + offset;
  return base() + kFarFirst + (std::uint64_t{offset - kFarFirst} << kFarShift);
}

std::uint32_t DeadlineSet::rebase(std::uint64_t t) noexcept {
  // Whole steps that leave `t` one to two steps past the new base.
  const std::uint64_t old_base = base();
  const std::uint64_t steps = (t - old_base) / kRebaseStep - 1;
  const std::uint64_t new_base = old_base + steps * kRebaseStep;
  auto request = decode(request_), stall = decode(write_stall_);
  std::array<std::uint64_t, kClaimedSlots> claimed;
  for (std::size_t i = 0; i < kClaimedSlots; ++i) claimed[i] = decode(claimed_at_[i]);
  auto anchor = [&](std::uint32_t a) {
    const std::uint64_t at = old_base + a;
    return static_cast<std::uint32_t>(at > new_base ? at - new_base : 0);
  };
  read_ = anchor(read_);
  write_ = anchor(write_);
  all_ = anchor(all_);
  // The open tick stays put unless the epoch count is full: then it moves
  // forward (opened_at() later than the truth, max_age late, never early).
  const std::uint64_t epochs = (new_base - opened_) / kRebaseStep;
  if (epochs > kEpochMax) {
    opened_ = new_base - kEpochMax * kRebaseStep;
    epoch_ = kEpochMax;
  } else {
    epoch_ = epochs;
  }
  request_ = encode(request);
  write_stall_ = encode(stall);
  for (std::size_t i = 0; i < kClaimedSlots; ++i) claimed_at_[i] = encode(claimed[i]);
  return static_cast<std::uint32_t>(t - new_base);
}

bool DeadlineSet::set(Deadline kind, TimePoint when, TimePoint now,
                      const TickScale& scale) noexcept {
  assert(is_absolute(kind) && "idle slots and max_age follow the IdlePolicy");
  if (!is_absolute(kind)) return false;
  if (when != kNever) stamp(scale.ceil(now));  // rebases a set that lived long unstamped
  const std::uint32_t at = when == kNever ? kNeverOffset : encode(scale.ceil(when));
  if (kind == Deadline::request_timeout) {
    request_ = at;
    return true;
  }
  if (kind == Deadline::write_stall) {
    write_stall_ = at;
    return true;
  }
  // One pass: the kind's own slot if it holds one, else the first free one.
  std::size_t free = kClaimedSlots;
  for (std::size_t i = 0; i < kClaimedSlots; ++i) {
    if (claimed_kind_[i] == kind) {
      claimed_at_[i] = at;
      if (at == kNeverOffset) claimed_kind_[i] = kFree;
      return true;
    }
    if (free == kClaimedSlots && claimed_kind_[i] == kFree) free = i;
  }
  if (at == kNeverOffset) return true;  // nothing to clear
  if (free == kClaimedSlots) return false;
  claimed_kind_[free] = kind;
  claimed_at_[free] = at;
  return true;
}

void DeadlineSet::clear(Deadline kind) noexcept {
  if (kind == Deadline::request_timeout) {
    request_ = kNeverOffset;
    return;
  }
  if (kind == Deadline::write_stall) {
    write_stall_ = kNeverOffset;
    return;
  }
  for (std::size_t i = 0; i < kClaimedSlots; ++i) {
    if (claimed_kind_[i] == kind) {
      claimed_at_[i] = kNeverOffset;
      claimed_kind_[i] = kFree;
      return;
    }
  }
}

std::uint64_t DeadlineSet::idle_due(std::uint32_t anchor, Duration timeout,
                                    const TickScale& scale) const noexcept {
  const std::uint64_t t = scale.ticks_in(timeout);
  if (t == kNeverTicks) return kNeverTicks;
  const std::uint64_t from = base() + anchor;  // < 2^49
  return t >= kNeverTicks - from ? kNeverTicks : from + t;
}

std::uint64_t DeadlineSet::age_due(const TickScale& scale) const noexcept {
  if ((flags_ & kAgeFired) != 0) return kNeverTicks;
  const std::uint64_t t = scale.ticks_in(policy_->max_age);
  if (t == kNeverTicks) return kNeverTicks;
  return t >= kNeverTicks - opened_ ? kNeverTicks : opened_ + t;
}

TimePoint DeadlineSet::at(Deadline kind, const TickScale& scale) const noexcept {
  const IdlePolicy& p = *policy_;
  switch (kind) {
    case Deadline::read_idle:
      return scale.time(idle_due(read_, p.read_idle, scale));
    case Deadline::write_idle:
      return scale.time(idle_due(write_, p.write_idle, scale));
    case Deadline::all_idle:
      return scale.time(idle_due(all_, p.all_idle, scale));
    case Deadline::max_age:
      return scale.time(age_due(scale));
    case Deadline::request_timeout:
      return scale.time(decode(request_));
    case Deadline::write_stall:
      return scale.time(decode(write_stall_));
    default:
      for (std::size_t i = 0; i < kClaimedSlots; ++i)
        if (claimed_kind_[i] == kind) return scale.time(decode(claimed_at_[i]));
      return kNever;
  }
}

std::size_t DeadlineSet::claimed() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(claimed_kind_.begin(), claimed_kind_.end(), [](Deadline k) { return k != kFree; }));
}

TimePoint DeadlineSet::next_deadline(const TickScale& scale) const noexcept {
  const IdlePolicy& p = *policy_;
  // The earliest stored offset first (decoding is monotonic), then the
  // computed ones.
  std::uint32_t absolute = std::min(request_, write_stall_);
  for (const std::uint32_t d : claimed_at_) absolute = std::min(absolute, d);  // free: never
  const std::uint64_t t = std::min({idle_due(read_, p.read_idle, scale),
                                    idle_due(write_, p.write_idle, scale),
                                    idle_due(all_, p.all_idle, scale), decode(absolute),
                                    age_due(scale)});
  return scale.time(t);
}

std::optional<DeadlineEvent> DeadlineSet::take_due(TimePoint now,
                                                   const TickScale& scale) noexcept {
  const IdlePolicy& p = *policy_;
  // Due: the deadline's tick is at or before now (rounded down). An idle
  // event's anchor moves to now (rounded up), which may rebase first.
  const std::uint64_t floor_now = now < scale.origin ? 0 : scale.floor(now);
  const std::uint32_t stamp_now = stamp(scale.ceil(now));
  auto take_absolute = [&](std::uint32_t& d, Deadline kind) -> std::optional<DeadlineEvent> {
    if (d == kNeverOffset || floor_now < decode(d)) return std::nullopt;
    d = kNeverOffset;  // a request stays in_request(): its owner ends it (or closes)
    return DeadlineEvent{kind, true};
  };
  auto take_idle = [&](std::uint32_t& anchor, Duration timeout, std::uint8_t first_flag,
                       Deadline kind) -> std::optional<DeadlineEvent> {
    if (floor_now < idle_due(anchor, timeout, scale)) return std::nullopt;
    const bool first = (flags_ & first_flag) != 0;
    flags_ &= static_cast<std::uint8_t>(~first_flag);
    anchor = stamp_now;  // the next event of this kind, if still idle, one timeout later
    return DeadlineEvent{kind, first};
  };
  if (auto e = take_absolute(write_stall_, Deadline::write_stall)) return e;
  if (auto e = take_idle(read_, p.read_idle, kFirstRead, Deadline::read_idle)) return e;
  if (auto e = take_idle(write_, p.write_idle, kFirstWrite, Deadline::write_idle)) return e;
  if (auto e = take_idle(all_, p.all_idle, kFirstAll, Deadline::all_idle)) return e;
  if (auto e = take_absolute(request_, Deadline::request_timeout)) return e;
  // The due claimed slot with the lowest kind number (a stable order,
  // whatever order the slots were claimed in); its slot is freed.
  std::size_t due = kClaimedSlots;
  for (std::size_t i = 0; i < kClaimedSlots; ++i) {
    if (claimed_kind_[i] == kFree || floor_now < decode(claimed_at_[i])) continue;
    if (due == kClaimedSlots || claimed_kind_[i] < claimed_kind_[due]) due = i;
  }
  if (due != kClaimedSlots) {
    const Deadline kind = claimed_kind_[due];
    claimed_kind_[due] = kFree;
    claimed_at_[due] = kNeverOffset;
    return DeadlineEvent{kind, true};
  }
  if (floor_now >= age_due(scale)) {
    flags_ |= kAgeFired;
    return DeadlineEvent{Deadline::max_age, true};
  }
  return std::nullopt;
}

}  // namespace heartwheel::net::detail
