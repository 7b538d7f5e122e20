// See heartwheel/net/restart.h.
#include <fcntl.h>
#include <heartwheel/net/restart.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace heartwheel::net::restart {

namespace {

std::atomic<bool> g_draining{false};
std::atomic<bool> g_replaced{false};

// A descriptor number in decimal, or -1.
int parse_fd(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > 1 << 20) return -1;
  return static_cast<int>(v);
}

bool valid_fd(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) >= 0; }

void set_cloexec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

Inherited read_environment() {
  Inherited in;
  if (const char* list = std::getenv(kListenFdsVariable)) {
    std::string s(list);
    std::size_t start = 0;
    while (start <= s.size()) {
      const std::size_t comma = s.find(',', start);
      const std::string item = s.substr(start, comma == std::string::npos ? comma : comma - start);
      const int fd = parse_fd(item.c_str());
      if (!valid_fd(fd)) {
        in.listeners.clear();  // all or nothing: a wrong list is no list
        break;
      }
      in.listeners.push_back(fd);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (const int fd = parse_fd(std::getenv(kMetricsFdVariable)); valid_fd(fd)) in.metrics = fd;
  if (const int fd = parse_fd(std::getenv(kReadyFdVariable)); valid_fd(fd)) in.ready_fd = fd;
  for (int fd : in.listeners) set_cloexec(fd);
  if (in.metrics >= 0) set_cloexec(in.metrics);
  if (in.ready_fd >= 0) set_cloexec(in.ready_fd);
  ::unsetenv(kListenFdsVariable);
  ::unsetenv(kMetricsFdVariable);
  ::unsetenv(kReadyFdVariable);
  return in;
}

// systemd's notification protocol (sd_notify(3)): one datagram to the unix
// socket NOTIFY_SOCKET names ('@' = the abstract namespace). The protocol
// is stable and documented for reimplementation; libsystemd would be a
// dependency for these twenty lines.
void notify_systemd(const std::string& state) noexcept {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t len = std::strlen(path);
  if (len >= sizeof addr.sun_path) return;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
  ::close(fd);
}

}  // namespace

const Inherited& inherited() {
  static const Inherited in = read_environment();
  return in;
}

void announce_ready() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    const Inherited& in = inherited();
    if (in.ready_fd >= 0) {
      const char msg[] = "ready\n";
      (void)!::write(in.ready_fd, msg, sizeof msg - 1);
      ::close(in.ready_fd);
    }
    notify_systemd("MAINPID=" + std::to_string(::getpid()) + "\nREADY=1");
  });
}

void set_draining() noexcept { g_draining = true; }
bool draining() noexcept { return g_draining.load(); }
void set_replaced() noexcept { g_replaced = true; }
bool replaced() noexcept { return g_replaced.load(); }

}  // namespace heartwheel::net::restart
