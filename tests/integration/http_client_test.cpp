// http::Client against real servers on loopback: nginx (a temporary config
// on a free port, stopped by PID) and an aiohttp application
// (http_backend.py, under /usr/bin/python3): keep-alive reuse counted,
// Content-Length and chunked bodies, a 1 MiB limit, a deadline on a server
// that stalls mid-body, Connection: close, retries of idempotent requests
// only, refused connections reported at once, the bound on requests in
// flight.
#include <heartwheel/common/error.h>
#include <heartwheel/http/client.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/net_transport.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "closed_port.h"
#include "loop_runner.h"
#include "process_support.h"
#include "unit/tls_support.h"

#ifndef HEARTWHEEL_HTTP_BACKEND
#error "HEARTWHEEL_HTTP_BACKEND must name tests/integration/http_backend.py"
#endif

using namespace hwproc;
using namespace std::chrono_literals;
namespace http = heartwheel::http;
using heartwheel::errc;

namespace {

const char* kNginx = "/usr/sbin/nginx";

// nginx with a temporary prefix: /hello, /close (no keep-alive), and two
// static files, exactly 1 MiB and 1 MiB + 1 byte; with `cert`, also /hello
// over TLS on tls_port.
struct Nginx {
  explicit Nginx(const heartwheel::tls::CertificateFiles* cert = nullptr) {
    const auto ports = free_ports(2);
    port = ports[0];
    tls_port = cert ? ports[1] : 0;
    {
      std::ofstream(dir.file("1mib.bin")) << std::string(std::size_t{1} << 20, 'a');
      std::ofstream(dir.file("over.bin")) << std::string((std::size_t{1} << 20) + 1, 'b');
    }
    std::ofstream conf(dir.file("nginx.conf"));
    conf << (::geteuid() == 0 ? "user root;\n" : "") << "worker_processes 1;\ndaemon off;\n"
         << "pid " << dir.file("nginx.pid") << ";\nerror_log " << dir.file("error.log") << ";\n"
         << "events { worker_connections 1024; }\nhttp {\n  access_log off;\n"
         << "  client_body_temp_path " << dir.file("body") << ";\n  proxy_temp_path "
         << dir.file("proxy") << ";\n  fastcgi_temp_path " << dir.file("fastcgi")
         << ";\n  uwsgi_temp_path " << dir.file("uwsgi") << ";\n  scgi_temp_path "
         << dir.file("scgi") << ";\n  keepalive_requests 100000;\n"
         << "  server {\n    listen 127.0.0.1:" << port << ";\n    root " << dir.file("") << ";\n"
         << "    location = /hello { return 200 \"hello\\n\"; }\n"
         << "    location = /close { keepalive_timeout 0; return 200 \"bye\\n\"; }\n  }\n";
    if (cert)
      conf << "  server {\n    listen 127.0.0.1:" << tls_port << " ssl;\n    ssl_certificate "
           << cert->certificate << ";\n    ssl_certificate_key " << cert->key << ";\n"
           << "    location = /hello { return 200 \"hello over tls\\n\"; }\n  }\n";
    conf << "}\n";
    conf.close();
    child.emplace(std::vector<std::string>{kNginx, "-p", dir.file(""), "-c", dir.file("nginx.conf"),
                                           "-e", dir.file("error.log")});
    const SteadyTime end = now() + Ms(10000);
    while (!(accepts(port) && (!tls_port || accepts(tls_port))) && now() < end) sleep_for(Ms(20));
    REQUIRE(accepts(port));
    address = "127.0.0.1:" + std::to_string(port);
  }
  ~Nginx() {
    child->signal(SIGQUIT);  // graceful: the master stops its workers
    if (!child->wait_exit(Ms(5000))) child->signal(SIGKILL);
  }
  TempDir dir;
  int port = 0;
  int tls_port = 0;
  std::string address;
  std::optional<Child> child;
};

struct Aiohttp {
  explicit Aiohttp(std::vector<std::string> extra = {})
      : child([&] {
          std::vector<std::string> a = {"/usr/bin/python3", HEARTWHEEL_HTTP_BACKEND};
          a.insert(a.end(), extra.begin(), extra.end());
          return a;
        }()),
        port(child.wait_listening(Ms(20000))) {
    REQUIRE(port > 0);
    address = "127.0.0.1:" + std::to_string(port);
  }
  Child child;
  int port;
  std::string address;
};

// An http::Client on a loop of its own.
class Harness {
 public:
  explicit Harness(http::ClientOptions o) {
    REQUIRE(uv_loop_init(&loop_) == 0);
    wheel_.emplace(&loop_);
    client_.emplace(*wheel_, std::move(o));
    client_->start();
  }
  ~Harness() {
    client_->stop();
    run_until([&] { return client_->pool().open_connections() == 0; }, Ms(3000));
    client_.reset();
    wheel_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }
  template <class Pred>
  bool run_until(Pred done, Ms limit) {
    return hwtest::run_loop_until(loop_, done, limit);
  }

  struct Result {
    bool done = false;
    std::error_code ec;
    http::ClientResponse response;
    long long ms = 0;
  };
  // Sends `r` and runs the loop until its callback came (at most `limit`).
  Result call(http::ClientRequest r, Ms limit = Ms(10000)) {
    auto res = std::make_shared<Result>();
    const SteadyTime t0 = now();
    const std::error_code ec =
        client_->request(std::move(r), [res, t0](std::error_code e, http::ClientResponse& resp) {
          res->done = true;
          res->ec = e;
          res->response = std::move(resp);
          res->ms = ms_since(t0);
        });
    REQUIRE_FALSE(ec);
    REQUIRE(run_until([&] { return res->done; }, limit));
    return *res;
  }
  Result get(const std::string& target, Ms limit = Ms(10000)) {
    http::ClientRequest r;
    r.target = target;
    return call(std::move(r), limit);
  }
  http::Client& client() { return *client_; }

 private:
  uv_loop_t loop_{};
  std::optional<heartwheel::LoopWheel> wheel_;
  std::optional<http::Client> client_;
};

http::ClientOptions options_for(const std::string& address, std::size_t connections = 1) {
  http::ClientOptions o;
  o.servers = {address};
  o.pool.connections_per_endpoint = connections;
  return o;
}

}  // namespace

TEST_CASE("An HTTP client keeps its connections alive against nginx and counts the reuse",
          "[http][client][nginx]") {
  Watchdog dog(Ms(60000));
  Nginx nginx;
  Harness h(options_for(nginx.address, 1));
  for (int i = 0; i < 100; ++i) {
    const auto r = h.get("/hello");
    REQUIRE_FALSE(r.ec);
    CHECK(r.response.status == 200);
    CHECK(r.response.body == "hello\n");
    CHECK(r.response.server == nginx.address);
  }
  CHECK(h.client().stats().sent == 100);
  CHECK(h.client().stats().reused == 99);  // one connection for all of them
  CHECK(h.client().pool().totals().connects == 1);
  CHECK(h.client().stats().responses == 100);
}

TEST_CASE("An HTTP client reads a 1 MiB body and refuses one byte more as too large",
          "[http][client][nginx]") {
  Watchdog dog(Ms(60000));
  Nginx nginx;
  auto o = options_for(nginx.address, 1);
  o.max_body_bytes = std::size_t{1} << 20;
  Harness h(o);
  const auto fits = h.get("/1mib.bin");
  REQUIRE_FALSE(fits.ec);
  CHECK(fits.response.status == 200);
  CHECK(fits.response.body.size() == (std::size_t{1} << 20));
  const auto over = h.get("/over.bin");
  CHECK(over.ec == errc::too_large);
  CHECK(h.client().stats().too_large == 1);
  // The connection it came on was closed (the rest of the body unread); the
  // next request gets a fresh one.
  const auto after = h.get("/hello");
  REQUIRE_FALSE(after.ec);
  CHECK(after.response.body == "hello\n");
  CHECK(h.client().pool().totals().connects == 2);
}

TEST_CASE("An HTTP client honours Connection: close and reconnects for the next request",
          "[http][client][nginx]") {
  Watchdog dog(Ms(60000));
  Nginx nginx;
  Harness h(options_for(nginx.address, 1));
  for (int i = 0; i < 3; ++i) {
    const auto r = h.get("/close");
    REQUIRE_FALSE(r.ec);
    CHECK(r.response.body == "bye\n");
    const std::string* c = r.response.header("Connection");
    REQUIRE(c);
    CHECK(*c == "close");
  }
  CHECK(h.client().stats().reused == 0);
  CHECK(h.client().pool().totals().connects >= 3);
}

TEST_CASE("An HTTP client against aiohttp: keep-alive, chunked bodies, POST with JSON",
          "[http][client][aiohttp]") {
  Watchdog dog(Ms(60000));
  Aiohttp backend;
  Harness h(options_for(backend.address, 2));
  for (int i = 0; i < 20; ++i) {
    const auto r = h.get("/hello");
    REQUIRE_FALSE(r.ec);
    CHECK(r.response.body == "hello");
  }
  const auto chunked = h.get("/chunked?n=50");
  REQUIRE_FALSE(chunked.ec);
  const std::string* te = chunked.response.header("Transfer-Encoding");
  REQUIRE(te);
  CHECK(*te == "chunked");
  std::string expected;
  for (int k = 0; k < 50; ++k) expected += "chunk-" + std::to_string(k) + ";";
  CHECK(chunked.response.body == expected);

  auto res = std::make_shared<Harness::Result>();
  REQUIRE_FALSE(h.client().post(
      "/echo", R"({"user":"42"})", {{"Content-Type", "application/json"}},
      [res](std::error_code e, http::ClientResponse& r) {
        res->done = true;
        res->ec = e;
        res->response = std::move(r);
      },
      1s));
  REQUIRE(h.run_until([&] { return res->done; }, Ms(5000)));
  REQUIRE_FALSE(res->ec);
  CHECK(res->response.body.find(R"("method": "POST")") != std::string::npos);
  CHECK(res->response.body.find(R"("body": "{\"user\":\"42\"}")") != std::string::npos);
  CHECK(res->response.body.find(R"("content_type": "application/json")") != std::string::npos);

  // The server saw at most the pool's two connections for all of it.
  const auto count = h.get("/connections");
  REQUIRE_FALSE(count.ec);
  CHECK(std::stoi(count.response.body) <= 2);
  CHECK(h.client().stats().reused >= 20);
}

TEST_CASE("An HTTP request's one deadline cuts off a server that stalls mid-body",
          "[http][client][aiohttp]") {
  Watchdog dog(Ms(60000));
  Aiohttp backend;
  Harness h(options_for(backend.address, 1));
  http::ClientRequest r;
  r.target = "/stall";
  r.timeout = 300ms;
  const auto stalled = h.call(r);
  CHECK(stalled.ec == errc::timed_out);
  CHECK(stalled.ms >= 290);  // not before the deadline
  CHECK(stalled.ms < 2000);  // and not at some idle timeout much later
  CHECK(h.client().stats().timed_out == 1);
  // The connection was closed under it; the client goes on with a new one.
  const auto next = h.get("/hello");
  REQUIRE_FALSE(next.ec);
  CHECK(next.response.body == "hello");
}

TEST_CASE("An HTTP client retries idempotent requests after a cut connection, never a plain POST",
          "[http][client][aiohttp]") {
  Watchdog dog(Ms(60000));
  Aiohttp backend;
  Harness h(options_for(backend.address, 1));
  const auto get = h.get("/reset?key=get");
  REQUIRE_FALSE(get.ec);
  CHECK(get.response.body == "second try");
  CHECK(get.response.attempts == 2);
  CHECK(h.client().stats().retries == 1);

  http::ClientRequest post;
  post.method = "POST";
  post.target = "/reset?key=post";
  const auto cut = h.call(post);
  CHECK((cut.ec == errc::closed || cut.ec == heartwheel::uv_error(UV_ECONNRESET)));
  CHECK(cut.response.attempts == 1);
  CHECK(h.client().stats().retries == 1);

  post.target = "/reset?key=post-idempotent";
  post.idempotent = true;  // the application says a repeat is harmless
  const auto retried = h.call(post);
  REQUIRE_FALSE(retried.ec);
  CHECK(retried.response.body == "second try");
  CHECK(h.client().stats().retries == 2);
}

TEST_CASE("A server answering 503 to everything is ejected and the requests go to the other",
          "[http][client][aiohttp]") {
  Watchdog dog(Ms(60000));
  Aiohttp good, sick(std::vector<std::string>{"--all-503"});
  http::ClientOptions o;
  o.servers = {good.address, sick.address};
  o.pool.connections_per_endpoint = 1;
  o.pool.balance = heartwheel::net::Balance::round_robin;
  o.pool.outlier.consecutive_failures = 3;
  o.pool.outlier.base_ejection_time = 10s;
  Harness h(o);
  REQUIRE(h.run_until([&] { return h.client().pool().open_connections() == 2; }, Ms(5000)));
  int from_sick = 0;
  for (int i = 0; i < 20; ++i) {
    const auto r = h.get("/hello");
    REQUIRE_FALSE(r.ec);  // a 503 is a response
    if (r.response.server == sick.address) {
      CHECK(r.response.status == 503);
      ++from_sick;
    } else {
      CHECK(r.response.body == "hello");
    }
  }
  CHECK(from_sick == 3);  // then ejected: every other request went to the good one
  for (const auto& e : h.client().pool().endpoints()) {
    if (e.address == sick.address) {
      CHECK(e.state == heartwheel::net::EndpointState::ejected);
      CHECK(e.stats.ejections == 1);
      CHECK(e.stats.calls_failed == 3);
    } else {
      CHECK(e.state == heartwheel::net::EndpointState::healthy);
      CHECK(e.stats.calls_ok == 17);
    }
  }
}

TEST_CASE("An HTTP client speaks TLS with SNI and checks the server's certificate",
          "[http][client][nginx][tls]") {
  Watchdog dog(Ms(60000));
  const auto& certs = tls_test::certs();
  Nginx nginx(&certs.ec_one);
  const auto make = [&](const std::string& ca, const std::string& name) {
    auto o = options_for("127.0.0.1:" + std::to_string(nginx.tls_port), 1);
    o.host = "localhost";
    auto context = std::make_shared<heartwheel::tls::Context>(tls_test::client_options(ca));
    o.pool.endpoint_transport = [context, name](const std::string&) {
      return heartwheel::tls::client_transport(context, name);
    };
    return o;
  };
  {
    Harness h(make(certs.ec_one.certificate, "localhost"));
    const auto r = h.get("/hello");
    REQUIRE_FALSE(r.ec);
    CHECK(r.response.body == "hello over tls\n");
    const auto again = h.get("/hello");
    REQUIRE_FALSE(again.ec);
    CHECK(h.client().stats().reused == 1);
  }
  {  // a certificate nobody told it to trust: refused, reported at once
    Harness h(make(certs.stranger.certificate, "localhost"));
    const auto r = h.get("/hello", Ms(5000));
    CHECK(r.ec == errc::protocol_error);
    CHECK(r.ms < 2000);
  }
  {  // the right certificate for another name
    Harness h(make(certs.ec_one.certificate, "other.example"));
    const auto r = h.get("/hello", Ms(5000));
    CHECK(r.ec == errc::protocol_error);
  }
}

TEST_CASE("An HTTP client reports a refused connection at once, not at the deadline",
          "[http][client]") {
  Watchdog dog(Ms(30000));
  heartwheel::test::ClosedPort closed;
  auto o = options_for("127.0.0.1:" + std::to_string(closed.port()), 2);
  o.timeout = 10s;
  Harness h(o);
  const auto r = h.get("/", Ms(5000));
  CHECK(r.ec == heartwheel::uv_error(UV_ECONNREFUSED));
  CHECK(r.ms < 2000);
  CHECK(r.ec.message() == "connection refused");
}

TEST_CASE("An HTTP client bounds its requests in flight with a clear error",
          "[http][client][aiohttp]") {
  Watchdog dog(Ms(60000));
  Aiohttp backend;
  auto o = options_for(backend.address, 1);
  o.max_in_flight = 2;
  Harness h(o);
  REQUIRE(h.run_until([&] { return h.client().pool().open_connections() == 1; }, Ms(5000)));
  int done = 0;
  const auto count = [&done](std::error_code, http::ClientResponse&) { ++done; };
  http::ClientRequest slow;
  slow.target = "/slow?ms=200";
  CHECK_FALSE(h.client().request(slow, count));
  CHECK_FALSE(h.client().request(slow, count));  // waits for the one connection
  CHECK(h.client().request(slow, count) == errc::limit_reached);
  CHECK(h.client().stats().refused == 1);
  REQUIRE(h.run_until([&] { return done == 2; }, Ms(5000)));
  CHECK(h.client().stats().waited == 1);
  CHECK_FALSE(h.client().request(slow, count));  // room again
  REQUIRE(h.run_until([&] { return done == 3; }, Ms(5000)));
}

TEST_CASE("An HTTP client's bad requests are refused at once", "[http][client]") {
  Watchdog dog(Ms(30000));
  heartwheel::test::ClosedPort closed;
  Harness h(options_for("127.0.0.1:" + std::to_string(closed.port()), 1));
  const auto never = [](std::error_code, http::ClientResponse&) { FAIL("called"); };
  http::ClientRequest r;
  r.target = "no-slash";
  CHECK(h.client().request(r, never) == errc::invalid_argument);
  r.target = "/ok";
  r.method = "GET X";
  CHECK(h.client().request(r, never) == errc::invalid_argument);
  r.method = "GET";
  r.headers = {{"X-Evil", "a\r\nInjected: 1"}};
  CHECK(h.client().request(r, never) == errc::invalid_argument);
}
