// heartwheel/common/detail/mpsc_queue.h - an intrusive lock-free multi-producer,
// single-consumer queue (Dmitry Vyukov's "non-intrusive MPSC node-based queue",
// in its intrusive form with a stub node).
//
// What it is
//   The hand-off from any thread to HashedWheelTimer's worker. Nodes live in
//   the objects they carry (MpscNode is a base or member of the element), so
//   push and pop never allocate. FIFO in the order producers' exchanges on the
//   head are linearised: a push that completes before another push starts is
//   popped first.
//
// Cost
//   push(): wait-free, one atomic exchange and one store.
//   pop(): lock-free for the consumer; O(1).
//
// Threads
//   push(): any thread. pop() and empty(): ONE consumer thread at a time
//   (the consumer role may move between threads only with a happens-before
//   hand-over, e.g. a thread join).
//
// The one subtlety of the algorithm
//   A producer first swings the head, then links its predecessor to it. A
//   consumer that runs between those two steps cannot reach the new node yet:
//   pop() returns nullptr although empty() is false. The consumer must retry
//   later (the producer finishes in a few instructions unless it is
//   preempted); it must not take "nullptr" to mean "empty" when deciding to
//   sleep. empty() answers exactly that question.
//
// Ownership
//   The queue never owns nodes. A node must stay alive, and must not be pushed
//   again, until it has been popped.
#pragma once

#include <atomic>
#include <type_traits>

namespace heartwheel::detail {

struct MpscNode {
  std::atomic<MpscNode*> mpsc_next{nullptr};
};

// T must derive from MpscNode (directly, or through a tag type when one object
// sits in several queues, see Timeout).
template <class T>
class MpscQueue {
 public:
  MpscQueue() noexcept : head_(&stub_), tail_(&stub_) {}
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  // Appends `item`. Any thread. Precondition: item is not in any queue.
  // The exchange is sequentially consistent so that a producer which then
  // reads a "consumer is asleep" flag and a consumer that stored the flag
  // before calling empty() cannot both miss each other (Dekker's pattern).
  void push(T& item) noexcept { push_node(static_cast<MpscNode&>(item)); }

  // Removes the oldest item, or returns nullptr when none is reachable now:
  // the queue is empty, or a producer is between its two steps (see above).
  // Consumer thread only.
  T* pop() noexcept {
    MpscNode* tail = tail_;
    MpscNode* next = tail->mpsc_next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = next->mpsc_next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      return static_cast<T*>(tail);
    }
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // producer mid-push
    // `tail` is the last node: put the stub behind it so tail can advance.
    push_node(stub_);
    next = tail->mpsc_next.load(std::memory_order_acquire);
    if (next == nullptr) return nullptr;  // another producer slipped in mid-push
    tail_ = next;
    return static_cast<T*>(tail);
  }

  // True when nothing was pushed that pop() has not returned, including a
  // push still in progress. Consumer thread only.
  bool empty() const noexcept {
    return tail_ == &stub_ && head_.load(std::memory_order_seq_cst) == &stub_;
  }

 private:
  static_assert(std::is_base_of_v<MpscNode, T>, "MpscQueue<T>: T must derive from MpscNode");

  void push_node(MpscNode& node) noexcept {
    node.mpsc_next.store(nullptr, std::memory_order_relaxed);
    MpscNode* prev = head_.exchange(&node, std::memory_order_seq_cst);
    prev->mpsc_next.store(&node, std::memory_order_release);
  }

  // Producers and the consumer write different ends: keep them on different
  // cache lines so pushes do not invalidate the consumer's line.
  alignas(64) std::atomic<MpscNode*> head_;  // the newest node; producers swing it
  alignas(64) MpscNode* tail_;               // the oldest node; consumer only
  MpscNode stub_;
};

}  // namespace heartwheel::detail
