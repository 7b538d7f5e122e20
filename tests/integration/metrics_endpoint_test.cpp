// metrics::Endpoint over loopback: what a scraper sees (status, content
// type, body), its refusals, a failing collector, a port in use, and that a
// served runtime::Workers' counters never include the endpoint's own
// connections.
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/runtime/workers.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>

#include "net_test_support.h"

namespace metrics = heartwheel::metrics;
namespace net = heartwheel::net;
namespace runtime = heartwheel::runtime;
using namespace std::chrono_literals;

namespace {

// One request on a fresh connection (Connection: close), the whole answer.
std::string request(int port, const std::string& method, const std::string& path) {
  const int fd = hwtest::connect_blocking(port);
  const std::string req =
      method + " " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return answer;
}

std::string body_of(const std::string& answer) {
  const auto at = answer.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : answer.substr(at + 4);
}

struct Echo final : net::Handler {
  void on_data(net::Connection& c, std::string_view d) override { c.write(d); }
};

}  // namespace

TEST_CASE("The endpoint answers GET of its path with the collector's text as Prometheus text",
          "[metrics][endpoint]") {
  int calls = 0;
  metrics::Endpoint endpoint({}, [&calls](metrics::TextWriter& out) {
    out.counter("test_scrapes_total", "Scrapes so far.", static_cast<std::uint64_t>(++calls));
  });
  REQUIRE(endpoint.port() > 0);
  CHECK(endpoint.address() == "127.0.0.1:" + std::to_string(endpoint.port()));
  const std::string answer = request(endpoint.port(), "GET", "/metrics");
  CHECK(answer.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(answer.find("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n") !=
        std::string::npos);
  CHECK(body_of(answer) ==
        "# HELP test_scrapes_total Scrapes so far.\n# TYPE test_scrapes_total counter\n"
        "test_scrapes_total 1\n");
  CHECK(body_of(request(endpoint.port(), "GET", "/metrics?x=1")).find("test_scrapes_total 2\n") !=
        std::string::npos);  // a fresh collection per scrape; the query is ignored
  const std::string head = request(endpoint.port(), "HEAD", "/metrics");
  CHECK(head.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(body_of(head).empty());
}

TEST_CASE("Other paths get 404, other methods 405 and a throwing collector 500, then it carries on",
          "[metrics][endpoint]") {
  std::atomic<bool> fail{true};
  metrics::Endpoint endpoint({}, [&fail](metrics::TextWriter& out) {
    if (fail) throw std::runtime_error("no data yet");
    out.gauge("test_up", "Up.", std::uint64_t{1});
  });
  CHECK(request(endpoint.port(), "GET", "/").rfind("HTTP/1.1 404 ", 0) == 0);
  const std::string post = request(endpoint.port(), "POST", "/metrics");
  CHECK(post.rfind("HTTP/1.1 405 ", 0) == 0);
  CHECK(post.find("\r\nAllow: GET, HEAD\r\n") != std::string::npos);
  const std::string failed = request(endpoint.port(), "GET", "/metrics");
  CHECK(failed.rfind("HTTP/1.1 500 ", 0) == 0);
  CHECK(body_of(failed).find("no data yet") != std::string::npos);
  fail = false;  // the endpoint thread reads it only inside a scrape; requests are sequential
  CHECK(body_of(request(endpoint.port(), "GET", "/metrics")).find("test_up 1\n") !=
        std::string::npos);
}

TEST_CASE("An endpoint on a port in use fails to start with a system error",
          "[metrics][endpoint]") {
  metrics::Endpoint first({}, [](metrics::TextWriter&) {});
  metrics::EndpointOptions o;
  o.port = first.port();
  CHECK_THROWS_AS(metrics::Endpoint(o, [](metrics::TextWriter&) {}), std::system_error);
  o.path = "metrics";
  CHECK_THROWS_AS(metrics::Endpoint(o, [](metrics::TextWriter&) {}), std::invalid_argument);
  CHECK_THROWS_AS(metrics::Endpoint({}, nullptr), std::invalid_argument);
  CHECK(metrics::endpoint_at("[::1]:9100").host == "::1");
  CHECK(metrics::endpoint_at("[::1]:9100").port == 9100);
  CHECK_THROWS_AS(metrics::endpoint_at("no-port"), std::invalid_argument);
}

TEST_CASE("A server's connection metrics do not count the endpoint's own connections",
          "[metrics][endpoint]") {
  runtime::WorkersOptions wo;
  wo.threads = 2;
  wo.publish_interval = 20ms;
  std::array<std::atomic<int>, 2> publishes{};
  wo.on_publish = [&publishes](unsigned worker, const net::LoopSnapshot&, net::Handler&) {
    ++publishes[worker];
  };
  runtime::Workers workers(wo, [](unsigned) { return std::make_unique<Echo>(); });
  workers.start();
  metrics::Endpoint endpoint(
      {}, [&workers](metrics::TextWriter& out) { metrics::write(out, workers.total()); });
  auto scrape = [&] { return body_of(request(endpoint.port(), "GET", "/metrics")); };
  for (int i = 0; i < 3; ++i) {
    const std::string text = scrape();
    REQUIRE(text.find("\nheartwheel_loops 2\n") != std::string::npos);
    CHECK(text.find("\nheartwheel_connections_accepted_total 0\n") != std::string::npos);
    CHECK(text.find("\nheartwheel_connections_open 0\n") != std::string::npos);
    // Two more publishes of each worker: a counted scrape would show by now
    // (the first may have copied the counters before the scrape ended).
    const int seen[2] = {publishes[0], publishes[1]};
    REQUIRE(hwtest::eventually(
        [&] { return publishes[0] >= seen[0] + 2 && publishes[1] >= seen[1] + 2; }));
  }
  const int client = hwtest::connect_blocking(workers.port());
  std::string text;
  CHECK(hwtest::eventually(  // published every 20 ms
      [&] {
        text = scrape();
        return text.find("\nheartwheel_connections_open 1\n") != std::string::npos;
      },
      5s, 20ms));
  CHECK(text.find("\nheartwheel_connections_accepted_total 1\n") != std::string::npos);
  ::close(client);
  workers.stop();
  workers.join();
}
