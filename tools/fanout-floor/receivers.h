// fanout-floor: the receiving side. Child processes that open the loopback
// connections to the sender's listener and read everything that arrives, so
// that what the sender measures is the send side alone (the receivers' read()
// calls run in other processes, on the other core when there is one).
//
// Each child holds at most `per_process` connections (the per-process limit
// of open files is 20,000 here: a child needs one descriptor per connection).
// The children count the bytes they read in shared memory; they exit when
// every one of their sockets has reached EOF, or with the parent
// (PR_SET_PDEATHSIG), so a killed sender leaves nothing behind.
//
// Threads: one object, used by the thread that created it.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fanout_floor {

struct ReceiverSlot;  // one per child, in memory shared with it

class ReceiverFleet {
 public:
  // Forks ceil(n / per_process) children that connect n sockets in all to
  // `listener` (an address on loopback) and then drain them. Returns at once:
  // the caller accepts the connections. Throws std::runtime_error when the
  // shared memory cannot be mapped or a fork fails.
  ReceiverFleet(const sockaddr_in& listener, std::size_t n, std::size_t per_process);
  // Kills the children that are still running and reaps them.
  ~ReceiverFleet();
  ReceiverFleet(const ReceiverFleet&) = delete;
  ReceiverFleet& operator=(const ReceiverFleet&) = delete;

  // Bytes read so far by every child together.
  std::uint64_t bytes_read() const noexcept;
  // True when a child could not connect (its connect() failed).
  bool failed() const noexcept;
  // Waits up to `timeout_ms` for every child to exit (after the sender closed
  // its sockets). Returns true when all exited with status 0.
  bool wait_exit(int timeout_ms);

 private:
  ReceiverSlot* slots_ = nullptr;
  std::size_t count_ = 0;
  std::vector<pid_t> children_;
};

}  // namespace fanout_floor
