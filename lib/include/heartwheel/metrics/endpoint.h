// heartwheel/metrics/endpoint.h - serves GET /metrics (Prometheus text
// format) from a thread of its own.
//
// What it is
//   A small HTTP server for scrapes and health probes (/healthz, /readyz:
//   EndpointOptions::ready): its own thread, libuv loop, LoopWheel,
//   net::Server and http::NetHandler (the library's own HTTP stack, with its
//   timeouts). For each GET (or HEAD) of options.path it calls the collector
//   on that thread with a fresh TextWriter and answers 200 with the text
//   (Content-Type text/plain; version=0.0.4). Other paths get 404, other
//   methods 405; a collector that throws gets 500 with its message, and the
//   endpoint carries on. Its connections live on its own server, so they are
//   not in the served program's counters: a scrape does not count itself.
//
// Wiring a server program is one call, after its workers exist:
//   metrics::Endpoint endpoint(metrics::endpoint_at(flag_value),  // "HOST:PORT"
//                              [&](metrics::TextWriter& out) {
//                                metrics::write(out, workers.total());
//                              });
//   std::printf("metrics on %s\n", endpoint.address().c_str());
// (tools/echo-server/main.cpp also serves a pre-forked server's processes from
// heartwheel/metrics/shared_slots.h.)
//
// Freshness: the collector decides. runtime::Workers publishes each worker's
// counters every WorkersOptions::publish_interval (500 ms by default), so a
// scrape of Workers::total() is at most that old.
//
// Threads: construct and destroy on one thread (any); the collector runs on
//   the endpoint's thread, one call at a time, and must read only what it
//   may read from a foreign thread (Workers::total() is safe). Cost when
//   idle: one thread blocked in epoll, no timer armed.
// Lifetime: the collector and what it reads must outlive the Endpoint.
// fork(): do not fork while an Endpoint exists (its thread is not copied);
//   create it in the process that serves.
#pragma once

#include <heartwheel/http/session_options.h>
#include <heartwheel/metrics/text_writer.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace heartwheel::metrics {

struct EndpointOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: the kernel picks one (read it back with port())
  // Listen with SO_REUSEPORT so several processes can serve one port (each
  // answers with the same merged counters; see tools/echo-server).
  bool reuse_port = false;
  // A listening socket to adopt instead of binding host:port: a restart's
  // successor takes its predecessor's (endpoint_at() sets it from
  // net::restart::inherited()). -1: bind.
  int listen_fd = -1;
  std::string path = "/metrics";
  // Health for load balancers and Kubernetes probes, on the same listener:
  // GET /healthz answers 200 "ok" while the process serves this endpoint
  // (liveness); GET /readyz answers 200 "ready" when `ready` returns an
  // empty string and 503 "not ready: REASON" with what it returned
  // otherwise (readiness: listening, its backends reachable, not draining).
  // `ready` runs on the endpoint's thread, like the collector. Empty: always
  // ready.
  std::function<std::string()> ready{};
  std::size_t max_connections = 64;  // scrapers beyond it are reset
  http::SessionOptions http = default_http();

  // Short timeouts: a scraper sends one small request and reads one answer.
  static http::SessionOptions default_http() {
    http::SessionOptions o;
    o.header_timeout = std::chrono::seconds(5);
    o.body_timeout = std::chrono::seconds(5);
    o.request_timeout = std::chrono::seconds(10);
    o.keepalive_timeout = std::chrono::seconds(30);  // Prometheus keeps its connection
    o.send_timeout = std::chrono::seconds(10);
    o.max_body_bytes = 1024;  // a scrape has no body
    return o;
  }
};

// Default options listening on `host_port` ("127.0.0.1:9100", "[::1]:0",
// ":9100" = all interfaces), the value of a --metrics-listen flag; in a
// restart's successor, on the socket it inherited for it. Throws
// std::invalid_argument (from net::parse_host_port) for anything else: a
// usage error.
EndpointOptions endpoint_at(std::string_view host_port);

using Collector = std::function<void(TextWriter&)>;

class Endpoint {
 public:
  // Starts the thread and returns once it listens. Throws
  // std::invalid_argument for bad options (a path not starting with '/', an
  // empty collector, invalid HTTP options) and std::system_error when it
  // cannot listen (address in use, bad host): nothing is left running then.
  Endpoint(EndpointOptions options, Collector collect);
  // Closes its connections, ends the loop and joins the thread.
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  int port() const noexcept;
  // The listening socket (what a restart hands its successor); the endpoint
  // keeps owning it.
  int listen_fd() const;
  // "HOST:PORT", IPv6 hosts in brackets ("[::1]:9100"), as programs print
  // it: "metrics on HOST:PORT".
  std::string address() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heartwheel::metrics
