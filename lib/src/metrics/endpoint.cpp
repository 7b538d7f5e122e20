// See heartwheel/metrics/endpoint.h. The endpoint is one thread running a
// libuv loop with a LoopWheel, a net::Server and an http::NetHandler: the
// library's own HTTP stack with its timeouts, without the runtime layer's
// Workers (metrics links only what it serves with: http, net and below).
#include <heartwheel/common/error.h>
#include <heartwheel/http/net_handler.h>
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/restart.h>
#include <heartwheel/net/server.h>
#include <heartwheel/timer/loop_wheel.h>

#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

namespace heartwheel::metrics {

struct Endpoint::Impl {
  EndpointOptions options;
  Collector collect;
  std::thread thread;
  std::promise<int> started;  // the port, or why the thread could not listen
  int port = 0;
  int listen_fd = -1;  // set with the port, before `started` says so
  std::mutex mu;
  uv_async_t* stop = nullptr;     // under mu: set while the loop runs
  net::Server* server = nullptr;  // the loop thread's

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

  net::ServerOptions server_options() const {
    net::ServerOptions so;
    so.host = options.host;
    so.port = options.port;
    so.reuse_port = options.reuse_port;
    so.listen_fd = options.listen_fd;
    so.max_connections = options.max_connections;
    so.backlog = 64;
    so.connection.idle = {};  // HTTP's own timeouts replace the idle policy
    so.connection.write.stall_timeout = options.http.send_timeout;
    return so;
  }

  // The thread: listens, reports the port (or why not) through `started`,
  // serves until stop is signalled, then lets every handle finish closing.
  void run() {
    uv_loop_t loop;
    if (const int rc = uv_loop_init(&loop); rc < 0) {
      started.set_exception(
          std::make_exception_ptr(std::system_error(uv_error(rc), "uv_loop_init")));
      return;
    }
    {
      std::unique_ptr<LoopWheel> wheel;
      std::unique_ptr<http::NetHandler> handler;
      std::unique_ptr<net::Server> srv;
      uv_async_t async;
      bool serving = false;
      try {
        LoopWheel::Options wo;
        wo.tick = std::chrono::milliseconds(100);  // timeouts of seconds
        wheel = std::make_unique<LoopWheel>(&loop, wo);
        handler = std::make_unique<http::NetHandler>(
            options.http,
            [this](const http::Request& req, http::Responder r) { serve(req, std::move(r)); });
        const net::ServerOptions so = server_options();
        srv = std::make_unique<net::Server>(*wheel, *handler, so);
        if (auto ec = srv->listen())
          throw std::system_error(
              ec, "metrics endpoint: listen on " + so.host + ":" + std::to_string(so.port));
        if (const int rc = uv_async_init(&loop, &async, &on_stop); rc < 0)
          throw std::system_error(uv_error(rc), "metrics endpoint: uv_async_init");
        serving = true;
      } catch (...) {
        started.set_exception(std::current_exception());
      }
      if (serving) {
        async.data = this;
        server = srv.get();
        {
          std::lock_guard lock(mu);
          stop = &async;
        }
        listen_fd = srv->listen_fd();
        started.set_value(srv->port());
        uv_run(&loop, UV_RUN_DEFAULT);  // until on_stop closed the server and the async
      }
      srv.reset();
      handler.reset();
      wheel.reset();
      uv_run(&loop, UV_RUN_DEFAULT);  // the closed handles finish
    }
    uv_loop_close(&loop);
  }

  static void on_stop(uv_async_t* async) {
    auto* impl = static_cast<Impl*>(async->data);
    {
      std::lock_guard lock(impl->mu);
      impl->stop = nullptr;
    }
    impl->server->close_all(net::CloseReason::local);
    uv_close(reinterpret_cast<uv_handle_t*>(async), nullptr);
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
  impl_->server_options().validate();
  std::future<int> port = impl_->started.get_future();
  Impl* impl = impl_.get();
  impl_->thread = std::thread([impl] { impl->run(); });
  try {
    impl_->port = port.get();  // std::system_error if it could not listen
  } catch (...) {
    impl_->thread.join();
    throw;
  }
}

Endpoint::~Endpoint() {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stop) uv_async_send(impl_->stop);
  }
  impl_->thread.join();
}

int Endpoint::port() const noexcept { return impl_->port; }

int Endpoint::listen_fd() const { return impl_->listen_fd; }

std::string Endpoint::address() const {
  const std::string& host = impl_->options.host;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port());
}

}  // namespace heartwheel::metrics
