// fanout-floor: the two ways of sending one frame to every socket.
//
// write:  one write() per socket, as an event loop's fast path does
//         (heartwheel's Connection::write: uv_try_write; Node's net: the same).
// uring:  the same sends as IORING_OP_SEND entries, `batch` to one
//         io_uring_enter (submit and collect the completions in one call);
//         MSG_DONTWAIT, so a socket without room completes -EAGAIN instead of
//         waiting in the kernel. With `fixed_files` the sockets are registered
//         with the ring first (no file lookup per send).
//
// A send the kernel did not take whole (short or EAGAIN; never seen with
// small frames and draining receivers) is counted and finished with poll()
// and write(), so every frame is delivered and the count tells whether the
// run measured what it says.
//
// Threads: the calling thread only; the sockets must be non-blocking.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace fanout_floor {

struct SendCounts {
  std::uint64_t sends = 0;        // frames handed to the kernel
  std::uint64_t short_sends = 0;  // not taken whole at once: finished with write()
  std::uint64_t syscalls = 0;     // write() or io_uring_enter() calls on the fast path
};

// One write() of `frame` to each socket of `fds`.
void send_with_write(const std::vector<int>& fds, std::string_view frame, SendCounts& counts);

// True when this build has io_uring (liburing found at configure time).
bool uring_built() noexcept;

class UringSender {
 public:
  // Sets up a ring of `batch` entries (1..32768) for `fds`. Throws
  // std::runtime_error when io_uring is not built in, not permitted by the
  // kernel (io_uring_disabled) or the files cannot be registered.
  UringSender(const std::vector<int>& fds, unsigned batch, bool fixed_files);
  ~UringSender();
  UringSender(const UringSender&) = delete;
  UringSender& operator=(const UringSender&) = delete;

  // Sends `frame` to every socket, `batch` sends per io_uring_enter.
  void send(std::string_view frame, SendCounts& counts);

  // The ring's setup flags the kernel accepted (SINGLE_ISSUER | DEFER_TASKRUN
  // where available), for the report.
  unsigned setup_flags() const noexcept;

 private:
  struct Ring;
  std::unique_ptr<Ring> ring_;
  const std::vector<int>& fds_;
  unsigned batch_;
  bool fixed_;
};

}  // namespace fanout_floor
