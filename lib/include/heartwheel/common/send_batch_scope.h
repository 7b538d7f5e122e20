// heartwheel/common/send_batch_scope.h - "one buffer is about to go to many
// connections": the calling thread's sends wait and go out together.
//
// What it is
//   A scope object. Code about to write one shared buffer to many
//   connections of its loop (pubsub::Hub's walk of a channel does) opens one
//   on the stack. While a scope is open on a thread, the net layer collects
//   the shared writes (net::Connection::write(SharedBytes)) of that thread's
//   connections that have nothing queued and hands them to the kernel
//   together: io_uring batches of up to 256 sends per system call where the
//   kernel offers io_uring, instead of one write() per socket
//   (lib/src/net/send_batch.h has the design and its measured price). When
//   the outermost scope closes, whatever waits is sent. Without io_uring, or
//   with ConnectionOptions::batch_shared_writes off, a scope changes nothing.
//
//   Why here and not in net: the code that knows a fan-out starts and ends
//   (pubsub) does not depend on net, and net cannot know it. This header is
//   the meeting point: a depth count and the flush the net layer registers.
//
// What a caller sees
//   write() returns at once, as it does when the socket takes the bytes; the
//   bytes leave when the outermost scope closes (or earlier, when the batch
//   is full or another write to the same connection must follow them).
//   Order per connection is kept. Errors of a batched send (a reset peer)
//   close that connection then, as a failed write() would have.
//
// Threads: per thread (thread_local); a scope belongs to the thread that
//   opened it and must close on it (a stack object does).
// Re-entrancy: scopes nest; only the outermost one's end flushes. The flush
//   may run connection callbacks (on_writable, a close), which may open
//   scopes of their own.
// Cost: a thread_local increment and decrement per scope; a flush only if
//   something waits.
#pragma once

namespace heartwheel {

class SendBatchScope {
 public:
  // What the net layer registers for the thread when it first holds a send
  // back: sends everything this thread holds back. Must not throw.
  using Flush = void (*)() noexcept;

  SendBatchScope() noexcept { ++depth_; }
  ~SendBatchScope() {
    if (--depth_ == 0 && flush_ != nullptr) flush_();
  }
  SendBatchScope(const SendBatchScope&) = delete;
  SendBatchScope& operator=(const SendBatchScope&) = delete;

  // True while a scope is open on the calling thread.
  static bool open() noexcept { return depth_ != 0; }
  // Registers the calling thread's flush (the net layer, once per thread).
  static void set_flush(Flush flush) noexcept { flush_ = flush; }

 private:
  static inline thread_local unsigned depth_ = 0;
  static inline thread_local Flush flush_ = nullptr;
};

}  // namespace heartwheel
