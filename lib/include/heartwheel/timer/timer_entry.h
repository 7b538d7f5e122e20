// heartwheel/timer/timer_entry.h - the intrusive node a timing wheel links.
//
// A TimerEntry lives inside its owner (a connection, a request, a Timeout) so
// scheduling allocates nothing: the wheel only links and unlinks the node.
// Size: two list pointers, a deadline in ticks and a callback pointer, 32 bytes
// on 64-bit targets (checked by a static_assert below).
//
// Ownership and threads
//   - The owner owns the entry; the wheel only borrows it while it is armed.
//   - An armed entry must be cancelled before it is destroyed or moved (the
//     destructor asserts this in debug builds). Entries are neither copyable
//     nor movable, so the address the wheel holds stays valid.
//   - An entry belongs to one wheel at a time and is used from that wheel's
//     thread only.
//
// Getting from the entry back to its owner
//   The callback receives the entry. Derive the owner from it:
//     struct Conn : heartwheel::TimerEntry { Conn() : TimerEntry(&on_fire) {} ... };
//     static void on_fire(TimerEntry& e) { auto& c = static_cast<Conn&>(e); ... }
//   An owner that needs several entries derives from TaggedTimerEntry<Tag> once
//   per entry and static_casts through the tag (see TaggedTimerEntry below).
#pragma once

#include <cassert>
#include <cstdint>

namespace heartwheel {

class TimingWheel;

namespace detail {
// The links. Slot heads in the wheel are bare ListNodes (16 bytes each), which
// is why TimerEntry keeps the links in a base of its own.
struct ListNode {
  ListNode* next = nullptr;
  ListNode* prev = nullptr;
};
}  // namespace detail

class TimerEntry : private detail::ListNode {
 public:
  // Called on the wheel's thread when the entry expires. The entry is already
  // unlinked (armed() is false), so the callback may re-schedule it, cancel
  // any other entry (including one due in the same tick), or destroy its owner.
  using Callback = void (*)(TimerEntry& self);

  explicit TimerEntry(Callback callback) noexcept : callback_(callback) {}
  ~TimerEntry() { assert(!armed() && "cancel a TimerEntry before destroying it"); }

  TimerEntry(const TimerEntry&) = delete;
  TimerEntry& operator=(const TimerEntry&) = delete;

  // True while the entry is scheduled (or due and waiting to be run).
  bool armed() const noexcept { return next != nullptr; }

  // Replaces the callback. Allowed at any time on the wheel's thread.
  void set_callback(Callback callback) noexcept { callback_ = callback; }

 private:
  friend class TimingWheel;
  std::uint64_t when_ = 0;  // deadline, in ticks since the wheel's origin
  Callback callback_;
};

static_assert(sizeof(void*) != 8 || sizeof(TimerEntry) == 32,
              "TimerEntry must stay at 32 bytes on 64-bit targets");

// For owners with several entries: derive from TaggedTimerEntry<A>,
// TaggedTimerEntry<B>, ... and get back with
//   static_cast<Owner&>(static_cast<TaggedTimerEntry<A>&>(entry)).
template <class Tag>
class TaggedTimerEntry : public TimerEntry {
 public:
  using TimerEntry::TimerEntry;
  TimerEntry& entry() noexcept { return *this; }
};

}  // namespace heartwheel
