// The calling thread's batch of shared sends: what a SendBatchScope
// (heartwheel/common/send_batch_scope.h) holds back and how it goes out.
//
// Why
//   A publication to N subscribers of a loop is N sends of one buffer. One
//   write() per socket costs N system calls; io_uring takes up to 256 sends
//   per io_uring_enter (IORING_OP_SEND, MSG_DONTWAIT: a socket without room
//   completes -EAGAIN at once, so nothing waits in the kernel) and reaps
//   their completions in the same call. Measured at 9,000 subscribers
//   (docs/BENCHMARKS.md, "The fan-out floor"): the batches cost 0.76-0.78x
//   the CPU per delivered message of one write() per socket, and
//   heartwheel-chat with them 0.83-0.94x that floor against 1.08-1.11x
//   without. Only shared writes (one buffer, many sockets) are held back:
//   for a write of its own a connection gains nothing from waiting.
//
// The choice, once per process
//   The first thread to hold a send back sets up a ring; if io_uring is not
//   there (a build without liburing, a kernel with io_uring_disabled, a
//   seccomp filter) one line on stderr says so and every thread writes at
//   once as before, one write() per socket. Each loop thread has its ring
//   (IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN where the kernel has them),
//   made at its first held-back send, gone with the thread: 256 entries,
//   about 24 KB of ring memory and one descriptor per loop thread.
//
// Finishing a send (Connection::finish_batched)
//   All sent whole: counted as a write() is. Short or -EAGAIN: the rest is
//   queued by reference in the connection's write queue, as write() does
//   with what the kernel did not take. Another error (a reset peer): the
//   connection closes with it. Callbacks (the high watermark's
//   on_writable(false)) run only after every connection of the batch was
//   finished, so a callback's own writes meet consistent queues.
//
// Order
//   A connection holds at most one send in the batch (Connection::batched_).
//   Any other write to it, its close and its destruction send the batch
//   first, so its bytes leave in the order they were written.
//
// Threads: one batch per thread, used only by it.
#pragma once

#include <heartwheel/net/connection.h>

#include <memory>
#include <vector>

namespace heartwheel::net {

class SendBatch {
 public:
  static constexpr unsigned kMaxSends = 256;  // sends per io_uring_enter

  // The calling thread's batch, made at the first call: null when sends are
  // not batched in this process (see above).
  static SendBatch* of_thread() noexcept;
  // Sends what the calling thread's batch holds (SendBatchScope's flush).
  static void flush_thread() noexcept;

  ~SendBatch();
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

  // Holds `bytes` for `conn`. Precondition: conn is open, nothing queued on
  // it, no send of it held (the caller marks it batched_). Sends the batch
  // when it reaches kMaxSends.
  void add(Connection& conn, const SharedBytes& bytes) noexcept;

 private:
  struct Ring;
  struct Send {
    Connection* conn;
    SharedBytes bytes;
    int result;  // bytes the kernel took, or -errno
  };
  SendBatch() = default;
  void flush() noexcept;
  // Submits `sends` to the ring and stores each one's result.
  void submit(std::vector<Send>& sends) noexcept;

  std::unique_ptr<Ring> ring_;
  std::vector<Send> held_;
  std::vector<Send> spare_;  // the other buffer: a callback may add while one is finished
};

}  // namespace heartwheel::net
