// See heartwheel/metrics/endpoint.h. The endpoint is a one-thread
// net::Workers running an http::NetHandler: the thread, its loop, listening,
// stopping and joining are the library's own, already tested machinery.
#include <heartwheel/http/net_handler.h>
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/restart.h>
#include <heartwheel/net/workers.h>

#include <stdexcept>
#include <string>

namespace heartwheel::metrics {

struct Endpoint::Impl {
  EndpointOptions options;
  Collector collect;
  std::unique_ptr<net::Workers> workers;

  void serve(const http::Request& req, http::Responder r) const {
    if (req.path() == "/healthz" || req.path() == "/readyz") {
      health(req, std::move(r));
      return;
    }
    if (req.path() != options.path) {
      r.respond(404, "not found; metrics are at " + options.path + "\n");
      return;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      http::Response res = http::Response::text(405, "GET or HEAD\n");
      res.headers.push_back({"Allow", "GET, HEAD"});
      r.respond(std::move(res));
      return;
    }
    TextWriter out;
    try {
      collect(out);
    } catch (const std::exception& e) {
      r.respond(500, std::string("metrics: collecting failed: ") + e.what() + "\n");
      return;
    }
    r.respond(http::Response::text(200, out.take(), kContentType));
  }

  // /healthz: alive. /readyz: what options.ready says (an exception is a
  // reason too: not ready).
  void health(const http::Request& req, http::Responder r) const {
    if (req.method != "GET" && req.method != "HEAD") {
      http::Response res = http::Response::text(405, "GET or HEAD\n");
      res.headers.push_back({"Allow", "GET, HEAD"});
      r.respond(std::move(res));
      return;
    }
    if (req.path() == "/healthz") {
      r.respond(200, "ok\n");
      return;
    }
    std::string why;
    try {
      if (options.ready) why = options.ready();
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty())
      r.respond(200, "ready\n");
    else
      r.respond(503, "not ready: " + why + "\n");
  }
};

EndpointOptions endpoint_at(std::string_view host_port) {
  const net::HostPort hp = net::parse_host_port(host_port);
  EndpointOptions o;
  o.host = hp.host;
  o.port = hp.port;
  o.listen_fd = net::restart::inherited().metrics;
  return o;
}

Endpoint::Endpoint(EndpointOptions options, Collector collect) : impl_(std::make_unique<Impl>()) {
  if (options.path.empty() || options.path[0] != '/')
    throw std::invalid_argument("metrics endpoint: the path must start with '/'");
  if (!collect) throw std::invalid_argument("metrics endpoint: a collector is required");
  options.http.validate();
  impl_->options = std::move(options);
  impl_->collect = std::move(collect);

  const EndpointOptions& o = impl_->options;
  net::WorkersOptions wo;
  wo.threads = 1;
  wo.server.host = o.host;
  wo.server.port = o.port;
  wo.server.reuse_port = o.reuse_port;
  wo.server.listen_fd = o.listen_fd;
  wo.server.max_connections = o.max_connections;
  wo.server.backlog = 64;
  wo.server.connection.idle = {};  // HTTP's own timeouts replace the idle policy
  wo.server.connection.write.stall_timeout = o.http.send_timeout;
  wo.wheel.tick = std::chrono::milliseconds(100);  // timeouts of seconds
  // Nobody reads the endpoint's own counters: publish (wake up) rarely.
  wo.publish_interval = std::chrono::hours(1);
  Impl* impl = impl_.get();
  impl_->workers = std::make_unique<net::Workers>(wo, [impl](unsigned) {
    return std::make_unique<http::NetHandler>(
        impl->options.http,
        [impl](const http::Request& req, http::Responder r) { impl->serve(req, std::move(r)); });
  });
  impl_->workers->start();  // throws std::system_error if it cannot listen
}

Endpoint::~Endpoint() {
  impl_->workers->stop();
  impl_->workers->join();
}

int Endpoint::port() const noexcept { return impl_->workers->port(); }

int Endpoint::listen_fd() const { return impl_->workers->listen_fds().front(); }

std::string Endpoint::address() const {
  const std::string& host = impl_->options.host;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port());
}

}  // namespace heartwheel::metrics
