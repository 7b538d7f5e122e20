// Reading small files for keys, secrets and configs (key_file.h).
#include "key_file.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace heartwheel::auth::detail {

namespace {

[[noreturn]] void fail(std::string_view what, const std::string& path, std::string_view why) {
  std::string m(what);
  m.append(" ").append(path).append(": ").append(why);
  throw std::invalid_argument(m);
}

std::string errno_text(int e) { return std::system_category().message(e); }

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_small_file(const std::string& path, std::string_view what,
                            std::size_t max_bytes) {
  if (path.empty()) throw std::invalid_argument(std::string(what) + ": no file name given");
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    const int e = errno;
    if (e == ENOENT) fail(what, path, "no such file");
    if (e == EACCES) fail(what, path, "permission denied (the server's user cannot read it)");
    fail(what, path, errno_text(e));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(what, path, errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail(what, path, "is a directory, not a file");
  if (S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) > max_bytes)
    fail(what, path,
         "is " + std::to_string(st.st_size) + " bytes, too large (at most " +
             std::to_string(max_bytes) + ")");
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(what, path, errno_text(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes)
      fail(what, path, "is too large (at most " + std::to_string(max_bytes) + " bytes)");
  }
  return text;
}

std::string_view trim_trailing_newlines(std::string_view text) noexcept {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

}  // namespace heartwheel::auth::detail
