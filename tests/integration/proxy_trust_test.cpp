// heartwheel-echo --proxy-protocol-from (issue 22): PROXY headers are
// believed only from the listed networks. From 127.0.0.1, a header is
// refused (reset at accept, counted as proxy_untrusted) with
// --proxy-protocol-from 10.0.0.0/8 and believed with 127.0.0.0/8; without the
// flag the program warns that every peer is trusted; a bad network is a usage
// error naming it. The echo runs as a process and is stopped by PID.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "eventually.h"
#include "process_support.h"

using hwproc::Ms;

namespace {

struct Echo {
  hwproc::Watchdog watchdog{Ms(60000)};
  std::unique_ptr<hwproc::Child> child;
  int port = 0, metrics_port = 0;

  explicit Echo(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {HEARTWHEEL_ECHO_BIN, "--listen", "127.0.0.1:0",
                                     "--proxy-protocol", "--metrics-listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    hwproc::ChildOptions o;
    o.capture_stderr = true;
    child = std::make_unique<hwproc::Child>(argv, o);
    port = child->wait_listening(Ms(10000));
    REQUIRE(port > 0);
    metrics_port = child->wait_metrics();
    REQUIRE(metrics_port > 0);
  }
  ~Echo() {
    child->signal(SIGKILL);
    child->wait_exit(Ms(5000));
  }
  // True once the scrape's `sample` reads `value` (the workers publish
  // their counters to the endpoint now and then, not at once), within 10 s.
  bool reads(const std::string& sample, double value) const {
    return hwtest::eventually(
        [&] { return hwproc::scrape(metrics_port, sample).value_or(-1) == value; },
        std::chrono::seconds(10), std::chrono::milliseconds(20));
  }
};

// Connects to the echo on 127.0.0.1, sends `bytes` (a send that fails
// because the server already refused is not an error here) and reads until
// the echo of `expect` came, EOF/reset, or 5 s. Returns what was read and
// whether the connection ended.
struct Outcome {
  std::string received;
  bool closed = false;
};
Outcome exchange(int port, const std::string& bytes, const std::string& expect) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  if (!bytes.empty()) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  Outcome out;
  const auto start = hwproc::now();
  while (out.received.size() < expect.size() || expect.empty()) {
    const long long left = 5000 - hwproc::ms_since(start);
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[256];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {  // EOF or reset
      out.closed = true;
      break;
    }
    out.received.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

TEST_CASE("A PROXY header from 127.0.0.1 is refused outside --proxy-protocol-from 10.0.0.0/8",
          "[process][proxy]") {
  Echo echo({"--proxy-protocol-from", "10.0.0.0/8", "--proxy-protocol-from", "192.168.0.0/16"});
  const Outcome with_header = exchange(echo.port, "PROXY TCP4 192.0.2.1 127.0.0.1 1001 80\r\nhello", "");
  CHECK(with_header.closed);  // EOF or reset ...
  CHECK(with_header.received.empty());  // ... and nothing echoed
  const Outcome silent = exchange(echo.port, "", "");  // no header at all: refused the same way
  CHECK(silent.closed);
  CHECK(echo.reads("heartwheel_connections_closed_total{reason=\"proxy_untrusted\"}", 2));
  CHECK(echo.reads("heartwheel_proxy_header_errors_total{cause=\"untrusted\"}", 2));
  CHECK(echo.reads("heartwheel_proxy_headers_total{version=\"1\"}", 0));
  CHECK(echo.child->errors().find("trusts every peer") == std::string::npos);
}

TEST_CASE("A PROXY header from 127.0.0.1 is believed with --proxy-protocol-from 127.0.0.0/8",
          "[process][proxy]") {
  Echo echo({"--proxy-protocol-from", "10.0.0.0/8", "--proxy-protocol-from", "127.0.0.0/8"});
  const Outcome o = exchange(echo.port, "PROXY TCP4 192.0.2.1 127.0.0.1 1001 80\r\nhello", "hello");
  CHECK_FALSE(o.closed);
  CHECK(o.received == "hello");
  CHECK(echo.reads("heartwheel_proxy_headers_total{version=\"1\"}", 1));
  CHECK(echo.reads("heartwheel_connections_closed_total{reason=\"proxy_untrusted\"}", 0));
}

TEST_CASE("A server with --proxy-protocol and no --proxy-protocol-from warns that every peer is trusted",
          "[process][proxy]") {
  Echo echo({});
  CHECK(echo.child->errors().find(
            "warning: --proxy-protocol without --proxy-protocol-from trusts every peer") !=
        std::string::npos);
  // ... and believes the header, as before.
  const Outcome o = exchange(echo.port, "PROXY TCP4 192.0.2.1 127.0.0.1 1001 80\r\nhi", "hi");
  CHECK_FALSE(o.closed);
  CHECK(o.received == "hi");
}
