// heartwheel-echo --proxy-protocol behind a real HAProxy (Debian 12's 2.6):
// one frontend sends PROXY v1 (send-proxy), one v2 (send-proxy-v2), both
// backends health-checked with check-send-proxy (v1 checks carry HAProxy's
// own addresses, v2 checks the LOCAL command). The echo answers what follows
// the header, and its per-address limit counts the clients HAProxy names in
// the header, not HAProxy's own address that every connection comes from.
// HAProxy is started on free ports and stopped by PID. Registered only when
// haproxy is installed (HAPROXY_BIN) and heartwheel-echo is built.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eventually.h"
#include "process_support.h"

using namespace std::chrono_literals;
using hwproc::Ms;
using nlohmann::json;

namespace {

// A blocking client from `source` (another loopback address), reads time out.
class Client {
 public:
  Client(const char* source, int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
    timeval tv{0, 300 * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  bool connected() const { return connected_; }
  // Sends `text` and waits up to `limit` for it to come back. False when the
  // connection closed (or nothing came) instead.
  bool echo(const std::string& text, Ms limit = Ms(3000)) {
    if (::send(fd_, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
      return false;
    std::string got;
    const auto start = hwproc::now();
    while (got.size() < text.size() && hwproc::ms_since(start) < limit.count()) {
      char buf[256];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return false;
      if (n > 0) got.append(buf, static_cast<std::size_t>(n));
    }
    return got == text;
  }
  // True once the peer closed (EOF or reset) within `limit`.
  bool closed_within(Ms limit) {
    const auto start = hwproc::now();
    while (hwproc::ms_since(start) < limit.count()) {
      char buf[64];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// heartwheel-echo --proxy-protocol, and HAProxy in front of it with a v1 and
// a v2 frontend, both backends checked every 100 ms.
struct Proxied {
  hwproc::TempDir dir;
  std::string stats = dir.file("echo.json");
  std::unique_ptr<hwproc::Child> echo, haproxy;
  int v1_port = 0, v2_port = 0;
  int metrics_port = 0;  // the echo's /metrics

  explicit Proxied(std::vector<std::string> echo_args) {
    echo_args.insert(echo_args.begin(),
                     {HEARTWHEEL_ECHO_BIN, "--listen", "127.0.0.1:0", "--proxy-protocol",
                      "--stats-json", stats, "--metrics-listen", "127.0.0.1:0"});
    echo = std::make_unique<hwproc::Child>(echo_args);
    const int echo_port = echo->wait_listening(Ms(10000));
    REQUIRE(echo_port > 0);
    metrics_port = echo->wait_metrics();
    REQUIRE(metrics_port > 0);
    const auto ports = hwproc::free_ports(2);
    v1_port = ports[0];
    v2_port = ports[1];
    const std::string server = "127.0.0.1:" + std::to_string(echo_port);
    const std::string cfg = dir.file("haproxy.cfg");
    std::ofstream(cfg) << "global\n  maxconn 200\n"
                          "defaults\n  mode tcp\n  timeout connect 2s\n  timeout client 10s\n"
                          "  timeout server 10s\n"
                          "frontend v1\n  bind 127.0.0.1:"
                       << v1_port << "\n  default_backend echo_v1\n"
                       << "frontend v2\n  bind 127.0.0.1:" << v2_port
                       << "\n  default_backend echo_v2\n"
                       << "backend echo_v1\n  server s1 " << server
                       << " send-proxy check check-send-proxy inter 100ms\n"
                       << "backend echo_v2\n  server s2 " << server
                       << " send-proxy-v2 check check-send-proxy inter 100ms\n";
    haproxy =
        std::make_unique<hwproc::Child>(std::vector<std::string>{HAPROXY_BIN, "-db", "-f", cfg},
                                        hwproc::ChildOptions{.capture_stderr = true, .env = {}});
    // Ready once both frontends accept and pass an echo through.
    for (const int port : {v1_port, v2_port}) {
      bool ok = false;
      for (int attempt = 0; attempt < 50 && !ok; ++attempt) {
        Client probe("127.0.0.1", port);
        ok = probe.connected() && probe.echo("ready", Ms(500));
        if (!ok) hwproc::sleep_for(Ms(100));
      }
      INFO(haproxy->errors());
      REQUIRE(ok);
    }
  }

  // Stops HAProxy, then the echo server (both by PID); the echo's statistics.
  json stop() {
    haproxy->signal(SIGTERM);
    CHECK(haproxy->wait_exit(Ms(10000)).has_value());
    echo->signal(SIGTERM);
    REQUIRE(echo->wait_exit(Ms(15000)) == 0);
    std::ifstream in(stats);
    REQUIRE(in.good());
    return json::parse(in);
  }
};

}  // namespace

TEST_CASE("Behind HAProxy send-proxy and send-proxy-v2 the echo answers what follows the header",
          "[integration][proxy][haproxy]") {
  Proxied p({});
  Client a("127.0.0.2", p.v1_port), b("127.0.0.3", p.v2_port);
  CHECK(a.echo("hello over v1"));
  CHECK(b.echo("hello over v2"));
  CHECK(a.echo(std::string(4000, 'x')));  // more than one read
  const json s = p.stop();
  INFO(s.dump(2).substr(0, 3000));
  CHECK(s["proxy_protocol"]["v1"].get<int>() >= 2);  // the ready probe, this client, checks
  CHECK(s["proxy_protocol"]["v2"].get<int>() >= 2);
  CHECK(s["proxy_protocol"]["invalid"] == 0);
  CHECK(s["proxy_protocol"]["timeouts"] == 0);
}

TEST_CASE("HAProxy check-send-proxy health checks arrive as v1 headers and v2 LOCAL",
          "[integration][proxy][haproxy]") {
  Proxied p({});
  // Checks every 100 ms per backend: wait until a few of each came.
  const auto scraped = [&p](const std::string& sample) {
    return hwproc::scrape(p.metrics_port, sample).value_or(0);
  };
  CHECK(hwtest::eventually(
      [&] {
        return scraped("heartwheel_proxy_local_headers_total") >= 3 &&
               scraped("heartwheel_proxy_headers_total{version=\"1\"}") >= 4;
      },
      Ms(10000), Ms(50)));
  const json s = p.stop();
  INFO(s.dump(2).substr(0, 3000));
  // Only the two ready probes were client traffic; the rest are checks.
  CHECK(s["proxy_protocol"]["local"].get<int>() >= 3);
  CHECK(s["proxy_protocol"]["v1"].get<int>() >= 4);
  CHECK(s["proxy_protocol"]["invalid"] == 0);
}

TEST_CASE("Behind HAProxy the per-address limit counts the clients the headers name",
          "[integration][proxy][haproxy][ip_limit]") {
  // Every connection reaches the echo from HAProxy's 127.0.0.1; only the
  // headers tell the clients apart.
  Proxied p({"--max-connections-per-ip", "2"});
  Client a1("127.0.0.4", p.v2_port), a2("127.0.0.4", p.v1_port);
  REQUIRE(a1.echo("a1"));
  REQUIRE(a2.echo("a2"));
  Client a3("127.0.0.4", p.v2_port);  // a third from 127.0.0.4: reset, HAProxy closes it
  CHECK_FALSE(a3.echo("a3"));
  CHECK(a3.closed_within(Ms(2000)));
  Client b1("127.0.0.5", p.v2_port), b2("127.0.0.5", p.v1_port);  // others still get in
  CHECK(b1.echo("b1"));
  CHECK(b2.echo("b2"));
  CHECK(a1.echo("a1 again"));
  const json s = p.stop();
  INFO(s.dump(2).substr(0, 3000));
  // a3, and now and then a health check: HAProxy's checks all come from its
  // own 127.0.0.1 (v1 checks name it, v2 LOCAL keeps the socket's), and
  // three of them at once are over the limit too.
  CHECK(s["closed_by_reason"]["ip_limit"].get<int>() >= 1);
  CHECK(s["proxy_protocol"]["invalid"] == 0);
}
