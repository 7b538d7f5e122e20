// A program built against the metrics layer of an installed heartwheel and
// nothing else (tests/install/check_install.sh: find_package(heartwheel
// COMPONENTS metrics), pkg-config heartwheel-metrics): a metrics::Endpoint
// on 127.0.0.1:0 whose collector writes net's families
// (metrics::write(out, net::LoopSnapshot)), scraped once over loopback with
// a blocking socket. Prints "ok" and exits 0 when the scrape answered 200
// with the families; otherwise says what failed and exits 1. Bounded: the
// socket gives up after 10 s.
#include <arpa/inet.h>
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/net/stats.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace metrics = heartwheel::metrics;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "metrics consumer: %s\n", what.c_str());
  return 1;
}

// GET /metrics over HTTP/1.0: the whole answer, up to the server's close.
std::string scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval limit{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) answer.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return answer;
}

}  // namespace

int main() {
  std::string answer;
  try {
    metrics::Endpoint endpoint(metrics::endpoint_at("127.0.0.1:0"), [](metrics::TextWriter& out) {
      metrics::write(out, heartwheel::net::LoopSnapshot{});
    });
    answer = scrape(endpoint.port());
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (answer.rfind("HTTP/1.1 200", 0) != 0 && answer.rfind("HTTP/1.0 200", 0) != 0)
    return fail("no 200 answer: " + answer.substr(0, 200));
  if (answer.find("\nheartwheel_connections_open 0\n") == std::string::npos)
    return fail("no heartwheel_connections_open in: " + answer.substr(0, 400));
  std::puts("ok");
  return 0;
}
