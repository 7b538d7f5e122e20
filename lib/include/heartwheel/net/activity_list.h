// heartwheel/net/activity_list.h - a host's connections in approximate order
// of their last read: the structure behind overload protection (overload.h).
//
// What it is
//   An intrusive doubly linked list (the nodes' own next_in_host /
//   prev_in_host pointers; no allocation) with the most recently reading
//   node at the front and the one silent longest at the back, plus a sweep
//   cursor that walks from the back toward the front.
//
// How the order stays cheap on the read path
//   A reading node moves to the front only when its generation stamp differs
//   from the current generation (`now >> shift`, a coarse clock): at most one
//   move per node per generation, whatever the read rate. The order is then
//   by the generation of each node's last read, and within one generation by
//   the first read in it. So for nodes a (nearer the back) and b (nearer the
//   front): last_read(b) > last_read(a) - one generation. Users check a
//   candidate's exact last read before acting on it (overload.h).
//   The stamp is 16 bits: a node that read exactly 65,536 generations ago
//   and reads again does not move (its stamp aliases). That only makes it
//   look older than it is; the exact check catches it.
//
// The sweep cursor
//   Points at the next node to visit; every node behind it (toward the back)
//   has been visited since restart_sweep(). Nodes that leave the list or move
//   to the front step the cursor to their front-side neighbour, so the
//   cursor never dangles and a node jumping to the front stays ahead of it.
//   nullptr = nothing left to visit.
//
// Node requirements: members `Node* next_in_host`, `Node* prev_in_host`
//   (next = toward the back, older), `std::uint16_t host_activity_gen`.
// Cost: every operation O(1). Threads: the owner's thread only.
#pragma once

#include <heartwheel/common/time.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace heartwheel::net {

// The generation of `t` for a granularity of 2^shift nanoseconds.
inline std::uint16_t activity_generation(TimePoint t, unsigned shift) noexcept {
  return static_cast<std::uint16_t>(static_cast<std::uint64_t>(t.time_since_epoch().count()) >>
                                    shift);
}

template <class Node>
class ActivityList {
 public:
  Node* front() const noexcept { return head_; }  // most recent reader
  Node* back() const noexcept { return tail_; }   // silent longest
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // The node after `n` (toward the back, read longer ago) / before it.
  static Node* next(const Node& n) noexcept { return n.next_in_host; }
  static Node* prev(const Node& n) noexcept { return n.prev_in_host; }
  // The generation `n` is stamped with.
  static std::uint16_t generation(const Node& n) noexcept { return n.host_activity_gen; }

  // Adds a new node at the front, stamped with `gen`.
  void push_front(Node& n, std::uint16_t gen) noexcept {
    n.host_activity_gen = gen;
    n.prev_in_host = nullptr;
    n.next_in_host = head_;
    if (head_) head_->prev_in_host = &n;
    head_ = &n;
    if (!tail_) tail_ = &n;
    ++size_;
  }

  // Unlinks `n` (which must be in this list).
  void remove(Node& n) noexcept {
    if (cursor_ == &n) cursor_ = n.prev_in_host;
    if (n.prev_in_host)
      n.prev_in_host->next_in_host = n.next_in_host;
    else
      head_ = n.next_in_host;
    if (n.next_in_host)
      n.next_in_host->prev_in_host = n.prev_in_host;
    else
      tail_ = n.prev_in_host;
    n.next_in_host = n.prev_in_host = nullptr;
    --size_;
  }

  // `n` read in generation `gen`: moves it to the front unless it moved in
  // that generation already. Returns true when it moved.
  bool touch(Node& n, std::uint16_t gen) noexcept {
    if (n.host_activity_gen == gen) return false;
    n.host_activity_gen = gen;
    if (head_ == &n) return true;  // already first: its stamp was all that was stale
    remove(n);                     // steps the cursor ahead of it if it was there
    push_front(n, gen);
    return true;
  }

  // ---- the sweep ---------------------------------------------------------------
  void restart_sweep() noexcept { cursor_ = tail_; }
  void stop_sweep() noexcept { cursor_ = nullptr; }
  Node* cursor() const noexcept { return cursor_; }
  // Marks the cursor's node visited. Precondition: cursor() != nullptr.
  void advance() noexcept { cursor_ = cursor_->prev_in_host; }

  // One step of the tail re-arm (overload.h): from the cursor toward the
  // front, `visit(node)` every node whose `anchor(node) + timeout` comes
  // within two generations of `now` (`generation`: the order's granularity),
  // at most `budget` of them (decremented). Stops at the first node further
  // away. Returns when to step again: `now` when the budget ran out, kNever
  // when every node was visited, else one generation before the stopping
  // node comes within reach, but not sooner than one generation from now (at
  // most one step per generation). Why that is soon enough: a node nearer the
  // front read at most one generation before the stopping node, so it is due
  // at least one generation after that next step, and is visited by a step
  // at or before its deadline. `visit` must not unlink nodes.
  template <class Anchor, class Visit>
  TimePoint sweep(TimePoint now, Duration timeout, Duration generation, std::size_t& budget,
                  Anchor&& anchor, Visit&& visit) {
    const TimePoint reach = deadline_after(now, 2 * generation);
    while (Node* n = cursor_) {
      const TimePoint due = deadline_after(anchor(*n), timeout);
      if (due == kNever) return kNever;  // no deadline on the read side
      if (due > reach) return std::max(due - 2 * generation, deadline_after(now, generation));
      if (budget == 0) return now;
      --budget;
      advance();
      visit(*n);
    }
    return kNever;
  }

 private:
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  Node* cursor_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace heartwheel::net
