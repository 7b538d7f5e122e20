// See heartwheel/runtime/workers.h.
#include <heartwheel/common/error.h>
#include <heartwheel/common/log.h>
#include <heartwheel/net/detail/ip_limiter.h>
#include <heartwheel/runtime/workers.h>

#include <atomic>
#include <future>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace heartwheel::runtime {

namespace {
enum Command : int { kNone = 0, kDrain = 1, kStop = 2 };
}

struct Workers::Worker {
  unsigned index = 0;
  std::thread thread;
  mutable std::mutex mu;
  uv_async_t* async = nullptr;  // under mu; null before the loop runs and after it ends
  net::LoopSnapshot published;  // under mu
  std::atomic<int> command{kNone};
  std::atomic<std::int64_t> drain_timeout_ns{0};
  std::atomic<std::int64_t> drain_spread_ns{0};
  std::atomic<bool> done{false};
  std::atomic<int> listen_fd{-1};  // the listener's descriptor once listening
  std::promise<int> started;

  void send(int cmd, Duration timeout, Duration spread = {}) {
    std::lock_guard lock(mu);
    drain_timeout_ns = timeout.count();
    drain_spread_ns = spread.count();
    int expected = command.load();
    // stop overrides drain, never the other way around
    while (expected < cmd && !command.compare_exchange_weak(expected, cmd)) {
    }
    if (async) uv_async_send(async);
  }
};

namespace {

// Everything that lives on one worker thread while its loop runs.
struct LoopContext {
  Workers* owner;
  LoopWheel* wheel;
  net::Server* server;
  uv_async_t async;
  uv_timer_t publish;
  int applied = kNone;
  bool finished = false;
  std::function<void()> on_command;
  std::function<void()> on_publish;
};

net::LoopSnapshot snapshot_of(net::Server& server, LoopWheel& wheel) {
  net::LoopSnapshot s;
  s.net = server.stats();
  s.wheel = wheel.wheel().stats();
  s.wheel_entries = wheel.wheel().size();
  s.loop = wheel.loop_stats();
  return s;
}

}  // namespace

Workers::Workers(WorkersOptions options, HandlerFactory factory)
    : Workers(std::move(options),
              factory ? LoopHandlerFactory([f = std::move(factory)](unsigned index, LoopWheel&) {
                return f(index);
              })
                      : LoopHandlerFactory()) {}

Workers::Workers(WorkersOptions options, LoopHandlerFactory factory)
    : options_(std::move(options)), factory_(std::move(factory)) {
  if (options_.threads == 0) throw std::invalid_argument("workers: threads must be at least 1");
  if (!factory_) throw std::invalid_argument("workers: a handler factory is required");
  if (options_.threads > 1) options_.server.reuse_port = true;
  options_.server.validate();
  // One count per client address for the whole process (ip_limiter.h).
  if (options_.server.max_connections_per_ip > 0 && !options_.server.ip_limiter)
    options_.server.ip_limiter =
        std::make_shared<net::detail::IpLimiter>(options_.server.max_connections_per_ip);
}

Workers::~Workers() {
  if (running()) stop();
  join();
}

void Workers::start() {
  if (!workers_.empty()) throw std::logic_error("workers: start() called twice");
  std::promise<void> go_promise;
  std::shared_future<void> go = go_promise.get_future().share();
  for (unsigned i = 0; i < options_.threads; ++i) {
    auto w = std::make_unique<Worker>();
    w->index = i;
    net::ServerOptions so = options_.server;
    if (i > 0) so.port = port_;
    auto future = w->started.get_future();
    Worker* wp = w.get();
    if (i < options_.listen_fds.size()) so.listen_fd = options_.listen_fds[i];
    w->thread = std::thread([this, wp, so, go] {
      log::set_thread_loop(static_cast<int>(wp->index));
      uv_loop_t loop;
      if (const int rc = uv_loop_init(&loop); rc < 0) {
        wp->started.set_exception(
            std::make_exception_ptr(std::system_error(uv_error(rc), "uv_loop_init")));
        wp->done = true;
        return;
      }
      {
        std::unique_ptr<LoopWheel> wheel;
        std::unique_ptr<net::Handler> handler;
        std::unique_ptr<net::Server> server;
        bool ok = false;
        try {
          wheel = std::make_unique<LoopWheel>(&loop, options_.wheel);
          handler = factory_(wp->index, *wheel);
          server = std::make_unique<net::Server>(*wheel, *handler, so);
          if (auto ec = server->listen())
            throw std::system_error(ec, "listen on " + so.host + ":" + std::to_string(so.port));
          wp->listen_fd = server->listen_fd();
          ok = true;
        } catch (...) {
          wp->started.set_exception(std::current_exception());
        }
        LoopContext ctx{};
        if (ok) {
          ctx.owner = this;
          ctx.wheel = wheel.get();
          ctx.server = server.get();
          auto finish = [this, &ctx, wp, &handler] {
            if (ctx.finished) return;
            ctx.finished = true;
            if (options_.on_finish) {
              try {
                options_.on_finish(wp->index, *handler);
              } catch (...) {  // must not cross the loop
              }
            }
            {
              std::lock_guard lock(wp->mu);
              wp->async = nullptr;
            }
            uv_close(reinterpret_cast<uv_handle_t*>(&ctx.async), nullptr);
            uv_close(reinterpret_cast<uv_handle_t*>(&ctx.publish), nullptr);
          };
          ctx.on_command = [&ctx, wp, finish] {
            const int cmd = wp->command.load();
            if (cmd <= ctx.applied || ctx.finished) return;
            ctx.applied = cmd;
            if (cmd == kDrain) {
              ctx.server->drain(Duration{wp->drain_timeout_ns.load()}, finish,
                                Duration{wp->drain_spread_ns.load()});
            } else if (cmd == kStop) {
              ctx.server->close_all(net::CloseReason::local);
              finish();
            }
          };
          ctx.on_publish = [this, &ctx, wp, &handler] {
            auto snap = snapshot_of(*ctx.server, *ctx.wheel);
            {
              std::lock_guard lock(wp->mu);
              wp->published = snap;
            }
            if (options_.on_publish) {
              try {
                options_.on_publish(wp->index, snap, *handler);
              } catch (...) {  // must not cross the loop; the hook's own business
              }
            }
          };
          int rc = uv_async_init(&loop, &ctx.async, [](uv_async_t* a) {
            static_cast<LoopContext*>(a->data)->on_command();
          });
          ctx.async.data = &ctx;
          if (rc == 0 && (rc = uv_timer_init(&loop, &ctx.publish)) < 0)
            uv_close(reinterpret_cast<uv_handle_t*>(&ctx.async), nullptr);
          if (rc < 0) {
            wp->started.set_exception(std::make_exception_ptr(
                std::system_error(uv_error(rc), "worker " + std::to_string(wp->index) + " setup")));
            ok = false;
          }
        }
        if (ok) {
          ctx.publish.data = &ctx;
          const auto every =
              std::max<std::uint64_t>(1, to_uv_millis_ceil(options_.publish_interval));
          uv_timer_start(
              &ctx.publish, [](uv_timer_t* t) { static_cast<LoopContext*>(t->data)->on_publish(); },
              every, every);
          uv_unref(reinterpret_cast<uv_handle_t*>(&ctx.publish));
          {
            std::lock_guard lock(wp->mu);
            wp->async = &ctx.async;
          }
          wp->started.set_value(server->port());
          // Accept nothing until every worker has its loop: with a low
          // descriptor limit, early connections could starve a later
          // worker's setup. The kernel queues them meanwhile.
          go.wait();
          ctx.on_command();  // a command sent before the async existed
          uv_run(&loop, UV_RUN_DEFAULT);
          ctx.on_publish();
        }
        server.reset();
        handler.reset();
        wheel.reset();
        uv_run(&loop, UV_RUN_DEFAULT);  // let the closed handles finish
      }
      uv_loop_close(&loop);
      wp->done = true;
    });
    workers_.push_back(std::move(w));
    try {
      const int port = future.get();
      if (i == 0) port_ = port;
    } catch (...) {
      go_promise.set_value();
      stop();
      join();
      throw;
    }
  }
  go_promise.set_value();
}

void Workers::drain(Duration timeout, Duration spread) {
  for (auto& w : workers_) w->send(kDrain, timeout, spread);
}

std::vector<int> Workers::listen_fds() const {
  std::vector<int> fds;
  for (const auto& w : workers_) fds.push_back(w->listen_fd.load());
  return fds;
}

void Workers::stop() {
  for (auto& w : workers_) w->send(kStop, Duration{0});
}

void Workers::join() {
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

bool Workers::running() const noexcept {
  for (const auto& w : workers_)
    if (!w->done) return true;
  return false;
}

std::vector<net::LoopSnapshot> Workers::snapshots() const {
  std::vector<net::LoopSnapshot> all;
  for (const auto& w : workers_) {
    std::lock_guard lock(w->mu);
    all.push_back(w->published);
  }
  return all;
}

net::LoopSnapshot Workers::total() const {
  net::LoopSnapshot sum;
  sum.loops = 0;
  for (const auto& s : snapshots()) sum.merge(s);
  return sum;
}

}  // namespace heartwheel::runtime
