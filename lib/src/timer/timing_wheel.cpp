// The hierarchical timing wheel. The header holds the contract and the level
// table; this file holds the mechanics. The level rule and the occupancy-bitmap
// search follow tokio's runtime/time/wheel; the slot heads double as list
// sentinels so that unlinking needs no back-pointer to the slot. Each slot is
// kWays such lists (see "Slots are split into ways" in the header).
#include <heartwheel/timer/timing_wheel.h>

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace heartwheel {

namespace {
// Set in TimerEntry::when_ while the entry sits in the ready list. Deadlines are
// below 2^63 ticks, so the bit is free.
constexpr std::uint64_t kReadyBit = std::uint64_t{1} << 63;

void list_init(detail::ListNode& head) noexcept { head.next = head.prev = &head; }

void list_push_back(detail::ListNode& head, detail::ListNode& node) noexcept {
  node.prev = head.prev;
  node.next = &head;
  head.prev->next = &node;
  head.prev = &node;
}

// Detaches the lists at heads[0 .. Ways) and calls visit(node) on each of
// their nodes, walking the lists in turn, one node each. A list walk is a
// chain of dependent loads, one cache miss at a time; Ways chains walked
// together keep Ways misses in flight. The prefetch starts the next miss of a
// list as soon as its address is known, not when the CPU's instruction
// window reaches that load a whole round later. visit may link nodes into
// these same heads: the detached chains still end at their head, so the walk
// does not see them.
template <unsigned Ways, class Visit>
void walk_detached(detail::ListNode* heads, Visit&& visit) noexcept {
  std::array<detail::ListNode*, Ways> cur;
  for (unsigned w = 0; w < Ways; ++w) {
    cur[w] = heads[w].next;
    list_init(heads[w]);
  }
  for (bool any = true; any;) {
    any = false;
    for (unsigned w = 0; w < Ways; ++w) {
      detail::ListNode* node = cur[w];
      if (node == &heads[w]) continue;
      any = true;
      cur[w] = node->next;  // read before visit() re-links the node
      __builtin_prefetch(cur[w]);
      visit(*node);
    }
  }
}
}  // namespace

TimingWheel::TimingWheel(Duration tick, TimePoint origin, SameTickOrder order)
    : tick_(tick),
      order_(order),
      way_mask_(order == SameTickOrder::fifo ? 0 : kWays - 1),
      origin_(origin),
      now_(origin) {
  if (tick.count() <= 0) throw std::invalid_argument("TimingWheel: tick must be positive");
  // Keep origin + tick * when inside the int64 nanosecond range for any
  // deadline the wheel holds (half the range, to leave room for `now`).
  const auto limit =
      static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max() / 2 / tick.count());
  max_ticks_ = std::min(kMaxTicks - 1, limit);
  for (auto& slot : slots_)
    for (auto& head : slot.ways) list_init(head);
  list_init(ready_);
  last_ = aimed(origin_, 0);
}

TimingWheel::~TimingWheel() {
  // Leave every entry disarmed, so owners that outlive the wheel can be
  // destroyed without tripping TimerEntry's assert.
  auto release = [](detail::ListNode& head) {
    for (detail::ListNode* n = head.next; n != &head;) {
      detail::ListNode* next = n->next;
      n->next = n->prev = nullptr;
      n = next;
    }
  };
  for (auto& slot : slots_)
    for (auto& head : slot.ways) release(head);
  release(ready_);
}

// The helpers below are `inline` although only this file uses them: the
// library is position-independent code, and GCC does not inline a function
// that could be interposed, so without it every schedule() made up to five
// calls through the PLT (refresh with the owner in cache at 1M entries:
// about 7 instead of 10 ns, docs/BENCHMARKS.md).

inline std::uint64_t TimingWheel::ticks_ceil(TimePoint t) const noexcept {
  const auto d = (t - origin_).count();
  if (d <= 0) return 0;
  const auto ud = static_cast<std::uint64_t>(d);
  const auto tk = static_cast<std::uint64_t>(tick_.count());
  return ud / tk + (ud % tk != 0);
}

inline std::uint64_t TimingWheel::ticks_floor(TimePoint t) const noexcept {
  const auto d = (t - origin_).count();
  if (d <= 0) return 0;
  return static_cast<std::uint64_t>(d) / static_cast<std::uint64_t>(tick_.count());
}

inline unsigned TimingWheel::level_for(std::uint64_t elapsed, std::uint64_t when) noexcept {
  // The highest bit in which the deadline differs from the current time picks
  // the level: the lowest level whose slots can still tell the two apart.
  std::uint64_t masked = (elapsed ^ when) | (kSlots - 1);
  if (masked >= kMaxTicks) masked = kMaxTicks - 1;
  const unsigned significant = static_cast<unsigned>(std::bit_width(masked)) - 1;
  return significant / kSlotBits;
}

inline void TimingWheel::link(TimerEntry& entry) noexcept {
  const unsigned level = level_for(elapsed_, entry.when_);
  const unsigned slot = slot_for(entry.when_, level);
  list_push_back(slot_at(level, slot).ways[way_for(entry)], entry);
  occupied_[level] |= std::uint64_t{1} << slot;
}

inline void TimingWheel::unlink(TimerEntry& entry) noexcept {
  detail::ListNode* prev = entry.prev;
  detail::ListNode* next = entry.next;
  prev->next = next;
  next->prev = prev;
  entry.next = entry.prev = nullptr;
  if (entry.when_ & kReadyBit) {
    entry.when_ &= ~kReadyBit;
    --ready_count_;
    return;
  }
  // When the list became empty, prev == next is its head. Slot heads live in
  // slots_, so the address alone tells which slot it was; the occupancy bit
  // goes when the slot's last way is empty (its kWays heads: two cache lines).
  if (prev == next) {
    const auto base = reinterpret_cast<std::uintptr_t>(slots_.data());
    const auto addr = reinterpret_cast<std::uintptr_t>(prev);
    if (addr >= base && addr < base + sizeof(slots_)) {
      const auto index = (addr - base) / sizeof(Slot);
      const Slot& slot = slots_[index];
      bool empty = true;
      for (const auto& way : slot.ways) empty &= way.next == &way;
      if (empty) occupied_[index / kSlots] &= ~(std::uint64_t{1} << (index % kSlots));
    }
  }
}

TimingWheel::LastDeadline TimingWheel::aimed(TimePoint deadline, std::uint64_t ticks) noexcept {
  std::uint64_t when = ticks;
  if (when < elapsed_) when = elapsed_;  // in the past: due at the next advance
  if (when - elapsed_ > max_ticks_) when = elapsed_ + max_ticks_;
  const unsigned level = level_for(elapsed_, when);
  const unsigned slot = slot_for(when, level);
  return LastDeadline{deadline,
                      ticks,
                      when,
                      &slot_at(level, slot),
                      &occupied_[level],
                      std::uint64_t{1} << slot,
                      when > elapsed_ && when - elapsed_ < (kMaxTicks >> kSlotBits)};
}

void TimingWheel::schedule_slow(TimerEntry& entry, TimePoint deadline) noexcept {
  if (deadline != last_.deadline) last_ = aimed(deadline, ticks_ceil(deadline));
  const std::uint64_t when = last_.when;
  ++stats_.scheduled;

  if (entry.armed()) {
    // Fast paths for refresh-on-I/O, where deadlines mostly move later.
    // Ready entries, entries due now, and the top level (whose slots may
    // wrap) take the general path.
    const std::uint64_t old = entry.when_;
    // Postpone in place: a later deadline leaves the entry in its slot. The
    // slot comes due no later than the old deadline, hence before the new
    // one, and process() re-links entries that are not due yet. Cost: one
    // store now, one relink per timeout period instead of one per slot
    // boundary crossed (measured in docs/BENCHMARKS.md). schedule_at() in
    // the header does the same inline.
    if (postpones(old)) {
      entry.when_ = when;
      return;
    }
    if (!(old & kReadyBit) && old > elapsed_ && when > elapsed_) {
      // Pulled in, but still inside the slot its deadline maps to: the slot
      // the entry occupies is due no later than that one, so only store.
      const unsigned old_level = level_for(elapsed_, old);
      const unsigned new_level = level_for(elapsed_, when);
      if (old_level == new_level && old_level + 1 < kLevels &&
          slot_for(old, old_level) == slot_for(when, new_level)) {
        entry.when_ = when;
        return;
      }
    }
    unlink(entry);
    ++stats_.relinked;
  } else {
    ++size_;
  }
  entry.when_ = when;
  link_last(entry);
}

bool TimingWheel::cancel(TimerEntry& entry) noexcept {
  if (!entry.armed()) return false;
  unlink(entry);
  --size_;
  ++stats_.cancelled;
  return true;
}

std::optional<TimingWheel::Expiration> TimingWheel::next_expiration() const noexcept {
  // Lower levels always expire first: an entry sits at level k only while its
  // deadline lies beyond the current level-(k-1) range.
  for (unsigned level = 0; level < kLevels; ++level) {
    const std::uint64_t bits = occupied_[level];
    if (bits == 0) continue;
    const unsigned pos = slot_for(elapsed_, level);
    const unsigned slot = (pos + static_cast<unsigned>(std::countr_zero(std::rotr(bits, static_cast<int>(pos))))) & (kSlots - 1);
    const std::uint64_t slot_range = std::uint64_t{1} << (level * kSlotBits);
    const std::uint64_t level_range = slot_range << kSlotBits;
    std::uint64_t deadline = (elapsed_ & ~(level_range - 1)) + slot * slot_range;
    // Only the top level can hold a slot "behind" the current one (deadlines
    // clamped to the wheel's range); it is due one level revolution later.
    if (level > 0 && deadline <= elapsed_) deadline += level_range;
    return Expiration{level, slot, deadline};
  }
  return std::nullopt;
}

void TimingWheel::process(const Expiration& exp) noexcept {
  Slot& slot = slot_at(exp.level, exp.slot);
  occupied_[exp.level] &= ~(std::uint64_t{1} << exp.slot);
  auto visit = [this](detail::ListNode& node) {
    auto& entry = static_cast<TimerEntry&>(node);
    if (entry.when_ <= elapsed_) {
      entry.when_ |= kReadyBit;
      list_push_back(ready_, entry);
      ++ready_count_;
    } else {
      link(entry);  // cascades down, or re-links an entry postponed in place
      ++stats_.cascaded;
    }
  };
  if (order_ == SameTickOrder::fifo)
    walk_detached<1>(slot.ways.data(), visit);  // a fifo wheel only uses way 0
  else
    walk_detached<kWays>(slot.ways.data(), visit);
}

std::size_t TimingWheel::advance(TimePoint now, std::size_t max_fired) {
  assert(!in_advance_ && "advance() called from inside a wheel callback");
  if (now > now_) now_ = now;
  const std::uint64_t target = ticks_floor(now_);
  const std::uint64_t was = elapsed_;
  while (auto exp = next_expiration()) {
    if (exp->deadline > target) break;
    elapsed_ = exp->deadline;
    process(*exp);
  }
  if (target > elapsed_) elapsed_ = target;
  if (elapsed_ != was) last_ = aimed(last_.deadline, last_.ticks);  // the levels moved under it

  in_advance_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }  // also when a callback throws
  } reset{in_advance_};

  std::size_t fired = 0;
  while (fired < max_fired && ready_.next != &ready_) {
    auto& entry = static_cast<TimerEntry&>(*ready_.next);
    unlink(entry);
    --size_;
    const Duration late = now_ - (origin_ + tick_ * static_cast<Duration::rep>(entry.when_));
    stats_.max_lateness = std::max(stats_.max_lateness, late);
    stats_.total_lateness += late;
    ++stats_.fired;
    ++fired;
    entry.callback_(entry);  // may touch any entry, including this one
  }
  return fired;
}

std::optional<TimePoint> TimingWheel::next_deadline() const noexcept {
  if (ready_count_ > 0) return now_;
  auto exp = next_expiration();
  if (!exp) return std::nullopt;
  return origin_ + tick_ * static_cast<Duration::rep>(exp->deadline);
}

TimePoint TimingWheel::deadline_of(const TimerEntry& entry) const noexcept {
  return origin_ + tick_ * static_cast<Duration::rep>(entry.when_ & ~kReadyBit);
}

void TimingWheel::validate() const {
  auto fail = [](const std::string& what) { throw std::logic_error("TimingWheel invariant: " + what); };
  std::size_t count = 0;
  auto check_links = [&](const detail::ListNode& h, const char* name) {
    const detail::ListNode* prev = &h;
    for (const detail::ListNode* n = h.next; n != &h; n = n->next) {
      if (n == nullptr) fail(std::string(name) + ": null link");
      if (n->prev != prev) fail(std::string(name) + ": broken back link");
      prev = n;
      if (++count > size_ + 1) fail(std::string(name) + ": more entries than size()");
    }
    if (h.prev != prev) fail(std::string(name) + ": head.prev is not the tail");
  };
  for (unsigned level = 0; level < kLevels; ++level) {
    for (unsigned slot = 0; slot < kSlots; ++slot) {
      const Slot& s = slot_at(level, slot);
      bool any = false;
      for (const auto& h : s.ways) any |= h.next != &h;
      const bool bit = (occupied_[level] >> slot) & 1;
      if (bit != any)
        fail("occupancy bit of level " + std::to_string(level) + " slot " + std::to_string(slot));
      for (unsigned way = 0; way < kWays; ++way) {
        const detail::ListNode& h = s.ways[way];
        check_links(h, "slot list");
        for (const detail::ListNode* n = h.next; n != &h; n = n->next) {
          const auto& e = static_cast<const TimerEntry&>(*n);
          if (way_for(e) != way)
            fail("entry in way " + std::to_string(way) + " of level " + std::to_string(level) +
                 " slot " + std::to_string(slot) + " belongs to way " + std::to_string(way_for(e)));
          if (e.when_ & kReadyBit) fail("ready bit set on an entry in a slot");
          if (e.when_ < elapsed_) fail("entry in a slot is overdue");
          // A postponed entry may sit in an earlier slot than its deadline's;
          // what must hold is that its slot is due no later (never early is
          // then guaranteed by process(), which re-links what is not due).
          const std::uint64_t slot_range = std::uint64_t{1} << (level * kSlotBits);
          const std::uint64_t level_range = slot_range << kSlotBits;
          std::uint64_t due = (elapsed_ & ~(level_range - 1)) + slot * slot_range;
          if (level > 0 ? due <= elapsed_ : due < elapsed_) due += level_range;
          if (due > e.when_)
            fail("entry at level " + std::to_string(level) + " slot " + std::to_string(slot) +
                 " belongs elsewhere (when=" + std::to_string(e.when_) +
                 ", elapsed=" + std::to_string(elapsed_) + ")");
        }
      }
    }
  }
  const std::size_t in_slots = count;
  check_links(ready_, "ready list");
  for (const detail::ListNode* n = ready_.next; n != &ready_; n = n->next) {
    const auto& e = static_cast<const TimerEntry&>(*n);
    if (!(e.when_ & kReadyBit)) fail("entry in the ready list lacks the ready bit");
    if ((e.when_ & ~kReadyBit) > elapsed_) fail("ready entry is not due");
  }
  if (count - in_slots != ready_count_) fail("ready count");
  if (count != size_) fail("size() is " + std::to_string(size_) + " but " + std::to_string(count) + " entries are linked");
  // The last deadline's cached mapping is the one schedule_slow would compute
  // now. (aimed() only reads; it is not const because it returns the slot
  // pointers schedule_at writes through.)
  auto& self = const_cast<TimingWheel&>(*this);
  if (last_ != self.aimed(last_.deadline, ticks_ceil(last_.deadline)))
    fail("last deadline: stale tick or slot");
}

std::string TimingWheel::dump() const {
  // Appends only: GCC 12 at -O3 reports a false -Wrestrict on
  // `"literal" + std::to_string(...)` (its bug 105329).
  std::string out = "elapsed=";
  out += std::to_string(elapsed_);
  out += " size=";
  out += std::to_string(size_);
  out += " ready=";
  out += std::to_string(ready_count_);
  out += '\n';
  for (unsigned level = 0; level < kLevels; ++level) {
    if (occupied_[level] == 0) continue;
    out += "  level ";
    out += std::to_string(level);
    out += ':';
    for (unsigned slot = 0; slot < kSlots; ++slot) {
      // "[slot]xN (a/b/...)": N entries, of which a in way 0, b in way 1, ...
      std::size_t n = 0;
      std::string ways;
      for (const auto& h : slot_at(level, slot).ways) {
        std::size_t in_way = 0;
        for (const detail::ListNode* p = h.next; p != &h; p = p->next) ++in_way;
        if (!ways.empty()) ways += '/';
        ways += std::to_string(in_way);
        n += in_way;
      }
      if (n == 0) continue;
      out += " [";
      out += std::to_string(slot);
      out += "]x";
      out += std::to_string(n);
      out += " (";
      out += ways;
      out += ')';
    }
    out += '\n';
  }
  return out;
}

}  // namespace heartwheel
