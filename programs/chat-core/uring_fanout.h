// heartwheel-chat --uring-fanout: a fan-out's sends submitted to io_uring in
// batches instead of one write() per subscriber (tools/fanout-floor measures
// the kernel's side of both; docs/BENCHMARKS.md, "The fan-out floor").
//
// During the hub's walk of a channel (pubsub::Hub), take() collects the
// shared frame for each subscriber whose write queue is empty (the loop's
// compressed form for one that agreed on permessage-deflate:
// ws::Connection::wire_frame; one with its own zlib context is left to
// deliver()); the hub's
// HubOptions::after_fan_out calls flush(), which submits the sends 256 to an
// io_uring_enter (IORING_OP_SEND, MSG_DONTWAIT: a socket without room
// completes -EAGAIN at once) and reaps them in the same call. What the kernel
// did not take whole goes to the connection's normal queue: the rest of a
// short send copied (net::Connection::write), a refused one by reference
// (ws::Connection::deliver). Nothing else writes to a collected connection
// between take() and flush(): both happen inside one event's fan-out.
//
// The frames the ring sent are counted as the normal path counts them
// (ws::Connection::note_delivered: bytes_written, write activity,
// messages_sent and shared_sent).
//
// Threads: one per worker loop, made, used and destroyed on that loop's
// thread (IORING_SETUP_SINGLE_ISSUER). current() is the calling thread's.
#pragma once

#include <heartwheel/pubsub/event.h>
#include <heartwheel/ws/connection.h>

#include <memory>
#include <vector>

namespace chat {

class UringFanout {
 public:
  // True when this build has liburing (the flag is refused otherwise).
  static bool built() noexcept;
  // Sets up the ring and makes this the calling thread's current(). Throws
  // std::runtime_error when io_uring cannot be set up (not built in, or the
  // kernel refuses: io_uring_disabled, seccomp).
  UringFanout();
  ~UringFanout();
  UringFanout(const UringFanout&) = delete;
  UringFanout& operator=(const UringFanout&) = delete;

  // The calling thread's batch, or null (--uring-fanout off).
  static UringFanout* current() noexcept;

  // Collects `frame` for `ws` if its connection is open with nothing queued;
  // returns false (the caller delivers it the normal way) otherwise.
  bool take(heartwheel::ws::Connection& ws, const heartwheel::pubsub::Frame& frame);
  // Sends everything taken since the last flush (see above).
  void flush() noexcept;

 private:
  struct Ring;
  struct Entry {
    heartwheel::ws::Connection* ws;
    heartwheel::pubsub::Frame frame;
  };
  void finish(const Entry& e, int result) noexcept;

  std::unique_ptr<Ring> ring_;
  std::vector<Entry> pending_;
};

}  // namespace chat
