// heartwheel/timer/expiring_map.h - a hash map whose entries expire on a loop's wheel.
//
// What it is
//   A key -> value map for what a server keeps per client for a while:
//   sessions, rate-limit buckets, dedupe ids, idempotency keys. Each entry
//   has its own deadline (Caffeine's per-entry expiry) and is removed by the
//   loop's timing wheel when it passes: no sweep, no work for entries that
//   are not due. An entry expires at the earlier of
//     - its write deadline: each insert/assign sets it, to now + the ttl
//       given for that entry, or the map's expire_after_write;
//     - its access deadline (with expire_after_access): each get() and each
//       write sets it to now + expire_after_access.
//   A duration of 0 switches that deadline off (deadline_after(), time.h):
//   an entry with neither never expires. With maximum_size, inserting past
//   the bound removes the least recently used entries (get and writes use an
//   entry; peek and iteration do not). Every removal goes to the removal
//   listener with its cause:
//     RemovalCause::expired    its deadline passed
//     RemovalCause::explicit_  erase(), erase_if(), clear()
//     RemovalCause::replaced   assign() gave the key a new value (the listener gets the old one)
//     RemovalCause::size       evicted by maximum_size
//
//     heartwheel::ExpiringMap<std::string, Session> sessions(
//         wheel, {.expire_after_access = 30min, .maximum_size = 100'000});
//     sessions.assign(id, Session{...});          // live 30 min past its last use
//     if (Session* s = sessions.get(id)) ...      // a use: pushes the deadline back
//     limits.insert(ip, Bucket{}, 1s);            // this entry: 1 s after the write
//
// Time and precision
//   Time is the TimerService's (LoopWheel in production; ManualTimerService
//   on a VirtualClock in tests, so expiry can be tested on hand-advanced
//   time). An entry is live while now() < its deadline: get, peek,
//   contains, expires_at and iteration skip an entry from its deadline on,
//   whether or not its removal ran yet. The removal runs when the wheel
//   reaches the deadline rounded up to its tick: never before the deadline,
//   at most one tick (plus the loop's latency) after. size() counts entries
//   not yet removed. Order: entries whose deadlines round up to the same
//   tick are removed (and reach the listener) in no particular order, the
//   wheel's (timing_wheel.h, SameTickOrder::unspecified); entries due on
//   different ticks in deadline order. A listener that must see expiries in
//   deadline order keeps its own order (e.g. a sequence number in the value)
//   or uses a tick fine enough to tell them apart.
//
// Cost (n entries; "a store" = no wheel operation)
//   get: a hash lookup, a clock read, and with expire_after_access a store
//     of the new access deadline (the wheel entry stays where it is: when
//     it fires at the old deadline it finds the later one and re-arms for it,
//     at most once per expire_after_access period, the wheel's lazy refresh),
//     with maximum_size an O(1) move to the front of the recency list.
//   peek, contains, expires_at: a lookup and a clock read.
//   insert/assign: a lookup, one allocation for a new key (the entry, its
//     hash and recency links and its wheel entry in one block), an O(1) wheel
//     schedule; growing the table rehashes every entry (amortised O(1)).
//   erase: a lookup, an O(1) unlink and cancel. Expiry: O(1) per entry
//     (the wheel's), plus the listener.
//   Memory per entry: sizeof(Entry) = 88 bytes + the key and value (plus
//   the allocator's overhead), and 8 to 16 bytes of bucket array.
//   The hash table is its own (chained, power-of-two buckets, multiplicative
//   hashing of Hash's result, so an identity std::hash does not cluster):
//   std::unordered_map cannot hold the wheel entry and the links in its
//   node and give the node back from the wheel's callback.
//
// Ownership and lifetime
//   The map owns its entries. Hash and Eq must not throw. The TimerService must outlive the map. The
//   destructor frees every entry without calling the listener.
//
// Threads: the owning loop's thread only (the TimerService's). Distinct maps: safe.
//
// Re-entrancy: the removal listener
//   runs on the loop thread from inside the call that removed the entry
//   (assign/insert: replaced, size, or expired for a key past its deadline;
//   erase, erase_if, clear: explicit, or expired; the wheel's expiry:
//   expired), after the entry left the map (size() and lookups no longer
//   see it). It may call any member of the map, including inserting the
//   same key again or erasing others; it must not destroy the map, and must
//   not throw (it may run inside the wheel's expiry: std::terminate). Its
//   key and value references are valid during the call only. Pointers from
//   get/peek stay valid until that entry is removed; iterators are
//   invalidated by any insert, assign, erase or expiry.
#pragma once

#include <heartwheel/common/stat_fields.h>
#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_entry.h>
#include <heartwheel/timer/timer_service.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace heartwheel {

enum class RemovalCause : std::uint8_t { expired, explicit_, replaced, size };

// "expired", "explicit", "replaced", "size".
constexpr const char* to_string(RemovalCause cause) noexcept {
  switch (cause) {
    case RemovalCause::expired: return "expired";
    case RemovalCause::explicit_: return "explicit";
    case RemovalCause::replaced: return "replaced";
    case RemovalCause::size: return "size";
  }
  return "unknown";
}

namespace detail {
// The recency list's links, apart so the list head is a bare pair.
struct RecencyLink {
  RecencyLink* lru_prev = nullptr;
  RecencyLink* lru_next = nullptr;
};
}  // namespace detail

template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class ExpiringMap {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<const K, V>;
  using RemovalListener = std::function<void(const K& key, V& value, RemovalCause cause)>;

  struct Options {
    // Each entry's lifetime from its last write, unless insert/assign give
    // one; 0: none.
    Duration expire_after_write{0};
    // Each entry's lifetime from its last get() or write; 0: none.
    Duration expire_after_access{0};
    // At most this many entries (least recently used go first); 0: no bound.
    std::size_t maximum_size = 0;
    // Told of every removal but the destructor's (see Re-entrancy).
    RemovalListener on_removal{};
  };

  struct Stats {
    std::uint64_t hits = 0;    // get() that found a live entry
    std::uint64_t misses = 0;  // get() that did not
    // Removals by cause, indexed by RemovalCause.
    std::array<std::uint64_t, 4> removals{};
    std::uint64_t removed(RemovalCause c) const noexcept {
      return removals[static_cast<std::size_t>(c)];
    }
    // The counters' table (heartwheel/common/stat_fields.h); `removals` is
    // by hand beside it.
    static StatTable<Stats> fields() noexcept {
      static constexpr StatField<Stats> kFields[] = {
          {"hits", &Stats::hits, StatKind::counter, "", ""},
          {"misses", &Stats::misses, StatKind::counter, "", ""},
      };
      static_assert(stat_fields_cover(StatTable<Stats>(kFields), sizeof(removals)),
                    "an ExpiringMap::Stats field without a row");
      return kFields;
    }
  };

  // Precondition: `timers` outlives the map. Throws std::invalid_argument
  // for a negative duration in `options`.
  explicit ExpiringMap(TimerService& timers, Options options = {}, Hash hash = {}, Eq eq = {})
      : timers_(&timers), options_(std::move(options)), hash_(std::move(hash)), eq_(std::move(eq)) {
    if (options_.expire_after_write.count() < 0 || options_.expire_after_access.count() < 0)
      throw std::invalid_argument("ExpiringMap: expire_after_write and expire_after_access must be >= 0 (0: off)");
    recency_.lru_prev = recency_.lru_next = &recency_;
  }
  ~ExpiringMap() { free_all(); }
  ExpiringMap(const ExpiringMap&) = delete;
  ExpiringMap& operator=(const ExpiringMap&) = delete;

  // Adds `key` -> `value` if the key has no live entry; its write deadline
  // is now + `ttl` (0: none), or now + expire_after_write without `ttl`.
  // An entry of the key that is past its deadline is replaced (the listener
  // gets it as expired). Returns false, changing nothing, if the key has a
  // live entry. May evict (size). Throws std::bad_alloc (the map unchanged)
  // or what V's move throws.
  bool insert(K key, V value) { return put(std::move(key), std::move(value), options_.expire_after_write, false); }
  bool insert(K key, V value, Duration ttl) { return put(std::move(key), std::move(value), ttl, false); }

  // Sets `key` -> `value`, replacing a live entry's value (the listener gets
  // the old one as replaced; expired for an entry past its deadline); the
  // write and access deadlines restart from now. Errors as insert().
  void assign(K key, V value) { put(std::move(key), std::move(value), options_.expire_after_write, true); }
  void assign(K key, V value, Duration ttl) { put(std::move(key), std::move(value), ttl, true); }

  // The live value of `key`, or nullptr. A use: pushes the access deadline
  // back (expire_after_access) and makes the entry most recently used
  // (maximum_size). The pointer is valid until the entry is removed.
  V* get(const K& key) {
    Entry* e = find(key);
    if (!e) {
      ++stats_.misses;
      return nullptr;
    }
    const TimePoint now = timers_->now();
    if (e->deadline <= now) {
      ++stats_.misses;
      return nullptr;
    }
    ++stats_.hits;
    if (options_.expire_after_access.count() > 0)
      e->deadline = std::min(e->write_deadline, deadline_after(now, options_.expire_after_access));
    if (options_.maximum_size > 0) make_most_recent(*e);
    return &e->kv.second;
  }

  // The live value of `key`, or nullptr, without using the entry.
  V* peek(const K& key) {
    Entry* e = live(key);
    return e ? &e->kv.second : nullptr;
  }
  const V* peek(const K& key) const {
    const Entry* e = live(key);
    return e ? &e->kv.second : nullptr;
  }
  bool contains(const K& key) const { return live(key) != nullptr; }
  // When the live entry of `key` expires (kNever: never); nullopt if none.
  std::optional<TimePoint> expires_at(const K& key) const {
    const Entry* e = live(key);
    if (!e) return std::nullopt;
    return e->deadline;
  }

  // Removes `key`'s entry. Returns true if it was live (listener: explicit);
  // false if there was none, or it was past its deadline (listener: expired).
  bool erase(const K& key) {
    Entry* e = find(key);
    if (!e) return false;
    const bool was_live = e->deadline > timers_->now();
    detach(*e);
    notify_and_free(e, was_live ? RemovalCause::explicit_ : RemovalCause::expired);
    return was_live;
  }

  // Removes every entry for which pred(key, value) is true (listener:
  // explicit, or expired for those past their deadline). Returns how many.
  // pred must not modify the map.
  template <class Pred>
  std::size_t erase_if(Pred pred) {
    const TimePoint now = timers_->now();
    Entry* removed = nullptr;
    std::size_t n = 0;
    for (Entry*& head : buckets_) {
      for (Entry* e = head; e;) {
        Entry* next = e->hash_next;
        if (pred(std::as_const(e->kv.first), e->kv.second)) {
          detach(*e);
          e->hash_next = removed;  // a private list until the listener has seen them
          removed = e;
          ++n;
        }
        e = next;
      }
    }
    notify_list(removed, now);
    return n;
  }

  // Removes every entry (listener: explicit, or expired for those past
  // their deadline).
  void clear() {
    const TimePoint now = timers_->now();
    Entry* removed = nullptr;
    for (Entry*& head : buckets_) {
      for (Entry* e = head; e;) {
        Entry* next = e->hash_next;
        detach(*e);
        e->hash_next = removed;
        removed = e;
        e = next;
      }
    }
    notify_list(removed, now);
  }

  // Room for n entries without rehashing. Throws std::bad_alloc.
  void reserve(std::size_t n) {
    if (n > buckets_.size()) rehash(std::bit_ceil(n));
  }

  // The size of one entry's block (the allocator adds its own overhead).
  static constexpr std::size_t entry_bytes() noexcept { return sizeof(Entry); }

  // Entries not yet removed (see "Time and precision").
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const Options& options() const noexcept { return options_; }
  const Stats& stats() const noexcept { return stats_; }
  TimerService& timers() const noexcept { return *timers_; }

  // The live entries, in no particular order, as (key, value) pairs. Does
  // not use them. Invalidated by insert, assign, erase and expiry.
  class iterator;
  iterator begin() { return iterator(this, timers_->now()); }
  iterator end() noexcept { return iterator(); }

 private:
  struct Entry : TimerEntry, detail::RecencyLink {
    template <class KK, class VV>
    Entry(ExpiringMap* m, KK&& key, VV&& value)
        : TimerEntry(&on_timer), map(m), kv(std::forward<KK>(key), std::forward<VV>(value)) {}
    ExpiringMap* map;
    Entry* hash_next = nullptr;
    Entry** hash_pprev = nullptr;  // the pointer that points here: O(1) unlink
    TimePoint write_deadline = kNever;
    TimePoint deadline = kNever;  // min(write deadline, access deadline)
    value_type kv;
  };

 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ExpiringMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = value_type*;
    using reference = value_type&;

    iterator() = default;
    reference operator*() const noexcept { return entry_->kv; }
    pointer operator->() const noexcept { return &entry_->kv; }
    iterator& operator++() noexcept {
      entry_ = entry_->hash_next;
      settle();
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& o) const noexcept { return entry_ == o.entry_; }

   private:
    friend class ExpiringMap;
    iterator(ExpiringMap* map, TimePoint now) noexcept : map_(map), now_(now) {
      if (!map->buckets_.empty()) entry_ = map->buckets_[0];
      settle();
    }
    // Moves on to the next live entry (or the end).
    void settle() noexcept {
      for (;;) {
        while (!entry_) {
          if (!map_ || ++bucket_ >= map_->buckets_.size()) return;
          entry_ = map_->buckets_[bucket_];
        }
        if (entry_->deadline > now_) return;
        entry_ = entry_->hash_next;
      }
    }
    ExpiringMap* map_ = nullptr;
    std::size_t bucket_ = 0;
    Entry* entry_ = nullptr;
    TimePoint now_{};
  };

 private:
  static constexpr std::size_t kMinBuckets = 16;

  std::size_t bucket_of(const K& key) const {
    // Fibonacci hashing: the top bits of hash * 2^64/phi, so the low bits of
    // an identity hash (std::hash of integers) do not pick the bucket alone.
    const auto h = static_cast<std::uint64_t>(hash_(key));
    return static_cast<std::size_t>((h * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  Entry* find(const K& key) const {
    if (size_ == 0) return nullptr;
    for (Entry* e = buckets_[bucket_of(key)]; e; e = e->hash_next)
      if (eq_(e->kv.first, key)) return e;
    return nullptr;
  }
  Entry* live(const K& key) const {
    Entry* e = find(key);
    return e && e->deadline > timers_->now() ? e : nullptr;
  }

  bool put(K&& key, V&& value, Duration ttl, bool replace) {
    if (ttl.count() < 0) ttl = Duration::zero();
    const TimePoint now = timers_->now();
    if (Entry* e = find(key)) {
      const bool was_live = e->deadline > now;
      if (was_live && !replace) return false;
      V old = std::exchange(e->kv.second, std::move(value));
      set_deadlines(*e, now, ttl);
      if (options_.maximum_size > 0) make_most_recent(*e);
      ++stats_.removals[static_cast<std::size_t>(was_live ? RemovalCause::replaced : RemovalCause::expired)];
      if (options_.on_removal)
        options_.on_removal(key, old, was_live ? RemovalCause::replaced : RemovalCause::expired);
      return true;
    }
    if (size_ + 1 > buckets_.size()) rehash(std::max(kMinBuckets, buckets_.size() * 2));
    Entry* e = new Entry(this, std::move(key), std::move(value));
    link(*e, bucket_of(e->kv.first));
    ++size_;
    set_deadlines(*e, now, ttl);
    if (options_.maximum_size > 0) {
      link_front(*e);
      while (size_ > options_.maximum_size && recency_.lru_prev != &recency_) {
        Entry* victim = static_cast<Entry*>(recency_.lru_prev);
        const bool was_live = victim->deadline > now;
        detach(*victim);
        notify_and_free(victim, was_live ? RemovalCause::size : RemovalCause::expired);
      }
    }
    return true;
  }

  void set_deadlines(Entry& e, TimePoint now, Duration ttl) noexcept {
    e.write_deadline = deadline_after(now, ttl);
    e.deadline = std::min(e.write_deadline, deadline_after(now, options_.expire_after_access));
    if (e.deadline != kNever) timers_->schedule_at(e, e.deadline);
    else if (e.armed()) timers_->cancel(e);
  }

  // The wheel reached the deadline the entry was armed for. Its deadline may
  // have moved later since (a get() with expire_after_access stores it
  // without touching the wheel): then re-arm for the rest.
  static void on_timer(TimerEntry& t) noexcept {
    Entry& e = static_cast<Entry&>(t);
    ExpiringMap& m = *e.map;
    if (e.deadline > m.timers_->now()) {
      if (e.deadline != kNever) m.timers_->schedule_at(e, e.deadline);
      return;
    }
    m.detach(e);
    m.notify_and_free(&e, RemovalCause::expired);
  }

  void link(Entry& e, std::size_t bucket) noexcept {
    Entry*& head = buckets_[bucket];
    e.hash_next = head;
    if (head) head->hash_pprev = &e.hash_next;
    head = &e;
    e.hash_pprev = &head;
  }
  void link_front(Entry& e) noexcept {
    e.lru_prev = &recency_;
    e.lru_next = recency_.lru_next;
    recency_.lru_next->lru_prev = &e;
    recency_.lru_next = &e;
  }
  void make_most_recent(Entry& e) noexcept {
    if (recency_.lru_next == &e) return;
    e.lru_prev->lru_next = e.lru_next;
    e.lru_next->lru_prev = e.lru_prev;
    link_front(e);
  }
  // Out of the table, the recency list and the wheel; the entry is not freed.
  void detach(Entry& e) noexcept {
    *e.hash_pprev = e.hash_next;
    if (e.hash_next) e.hash_next->hash_pprev = e.hash_pprev;
    if (e.lru_next) {
      e.lru_prev->lru_next = e.lru_next;
      e.lru_next->lru_prev = e.lru_prev;
    }
    if (e.armed()) timers_->cancel(e);
    --size_;
  }
  void notify_and_free(Entry* e, RemovalCause cause) noexcept {
    ++stats_.removals[static_cast<std::size_t>(cause)];
    if (options_.on_removal) options_.on_removal(e->kv.first, e->kv.second, cause);
    delete e;
  }
  void notify_list(Entry* removed, TimePoint now) noexcept {
    while (removed) {
      Entry* next = removed->hash_next;
      notify_and_free(removed, removed->deadline > now ? RemovalCause::explicit_ : RemovalCause::expired);
      removed = next;
    }
  }

  void rehash(std::size_t count) {
    std::vector<Entry*> old(count, nullptr);
    old.swap(buckets_);
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(count));
    for (Entry* head : old) {
      for (Entry* e = head; e;) {
        Entry* next = e->hash_next;
        link(*e, bucket_of(e->kv.first));
        e = next;
      }
    }
  }

  void free_all() noexcept {
    for (Entry* head : buckets_) {
      for (Entry* e = head; e;) {
        Entry* next = e->hash_next;
        if (e->armed()) timers_->cancel(*e);
        delete e;
        e = next;
      }
    }
    buckets_.clear();
    size_ = 0;
  }

  TimerService* timers_;
  Options options_;
  Hash hash_;
  Eq eq_;
  std::vector<Entry*> buckets_;  // a power of two of them, or none yet
  unsigned shift_ = 64;          // 64 - log2(buckets_.size())
  std::size_t size_ = 0;
  detail::RecencyLink recency_;  // most recent at lru_next, least recent at lru_prev
  Stats stats_;
};

}  // namespace heartwheel
