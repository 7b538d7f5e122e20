// See senders.h: the write() floor, and the slow path both modes share.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "send_rest.h"
#include "senders.h"

namespace fanout_floor {

void send_rest(int fd, std::string_view rest) {
  while (!rest.empty()) {
    const ssize_t r = write(fd, rest.data(), rest.size());
    if (r > 0) {
      rest.remove_prefix(static_cast<std::size_t>(r));
      continue;
    }
    if (r < 0 && errno != EAGAIN && errno != EINTR)
      throw std::runtime_error("write to a receiver failed: errno " + std::to_string(errno));
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, 1000);
  }
}

void send_with_write(const std::vector<int>& fds, std::string_view frame, SendCounts& counts) {
  for (const int fd : fds) {
    const ssize_t r = write(fd, frame.data(), frame.size());
    ++counts.syscalls;
    ++counts.sends;
    if (r == static_cast<ssize_t>(frame.size())) continue;
    ++counts.short_sends;
    send_rest(fd, frame.substr(r > 0 ? static_cast<std::size_t>(r) : 0));
  }
}

}  // namespace fanout_floor
