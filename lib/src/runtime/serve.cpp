// See heartwheel/runtime/serve.h.
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/common/error.h>
#include <heartwheel/common/log.h>
#include <heartwheel/net/restart.h>
#include <heartwheel/runtime/serve.h>
#include <heartwheel/runtime/successor.h>
#include <uv.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

namespace heartwheel::runtime {

namespace {

// The executable's name, as the shell typed it ("heartwheel-http").
std::string executable_name() {
#ifdef __GLIBC__
  return program_invocation_short_name;
#else
  return "server";
#endif
}

// The waiting thread's loop: two signal watchers, the tick and, once a
// signal came, the poll for the workers' end. Its handles are closed and the
// loop run to completion on every way out (the destructor), which also gives
// SIGTERM and SIGINT back to their default dispositions.
class Waiter {
 public:
  Waiter(Workers& workers, const ServeOptions& options)
      : workers_(workers), options_(options), program_(options.program) {
    if (program_.empty()) program_ = executable_name();
    check_uv(uv_loop_init(&loop_), "uv_loop_init");
    try {
      check_uv(uv_signal_init(&loop_, &term_), "uv_signal_init");
      ++made_;
      check_uv(uv_signal_init(&loop_, &intr_), "uv_signal_init");
      ++made_;
      check_uv(uv_signal_init(&loop_, &usr2_), "uv_signal_init");
      ++made_;
      check_uv(uv_timer_init(&loop_, &tick_), "uv_timer_init");
      ++made_;
      check_uv(uv_timer_init(&loop_, &poll_), "uv_timer_init");
      ++made_;
      for (uv_handle_t* h : handles()) h->data = this;
      check_uv(uv_signal_start(&term_, on_signal, SIGTERM), "uv_signal_start SIGTERM");
      check_uv(uv_signal_start(&intr_, on_signal, SIGINT), "uv_signal_start SIGINT");
      if (options.restart.on_sigusr2)
        check_uv(uv_signal_start(&usr2_, on_restart, SIGUSR2), "uv_signal_start SIGUSR2");
    } catch (...) {
      close();
      throw;
    }
  }
  ~Waiter() { close(); }
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // Runs until every worker loop has ended.
  void run() {
    const auto every = to_uv_millis_ceil(options_.tick_interval);
    if (options_.tick && every > 0) uv_timer_start(&tick_, on_tick, every, every);
    uv_run(&loop_, UV_RUN_DEFAULT);
  }

 private:
  std::array<uv_handle_t*, 5> handles() {
    return {reinterpret_cast<uv_handle_t*>(&term_), reinterpret_cast<uv_handle_t*>(&intr_),
            reinterpret_cast<uv_handle_t*>(&usr2_), reinterpret_cast<uv_handle_t*>(&tick_),
            reinterpret_cast<uv_handle_t*>(&poll_)};
  }
  static Waiter& of(void* handle) {
    return *static_cast<Waiter*>(static_cast<uv_handle_t*>(handle)->data);
  }

  // A custom log gets the whole line ("NAME: WHAT"); the process log adds
  // the program itself.
  void log(log::Level level, const std::string& what) const {
    if (options_.log)
      options_.log(program_ + ": " + (level == log::Level::error ? "error: " : "") + what);
    else
      log::write(level, what);
  }

  // Closes the handles made so far (the loop then has nothing left to run).
  void end_handles() {
    auto all = handles();
    for (int i = 0; i < made_; ++i)
      if (!uv_is_closing(all[static_cast<std::size_t>(i)]))
        uv_close(all[static_cast<std::size_t>(i)], nullptr);
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    end_handles();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }

  // Ends waiting once the workers have ended (after a drain or a stop).
  void check_done() {
    if (!workers_.running()) end_handles();
  }

  static void on_signal(uv_signal_t* s, int signum) {
    Waiter& w = of(s);
    if (w.draining_) {
      w.log(log::Level::info, "second signal, closing everything now");
      w.workers_.stop();
      return;
    }
    w.draining_ = true;
    net::restart::set_draining();
    w.log(log::Level::info, "signal " + std::to_string(signum) + ", draining (up to " +
                                format_duration(w.options_.drain_timeout) + ")");
    w.workers_.drain(w.options_.drain_timeout);
    // Worker loops end only after a drain or a stop: only now is there
    // anything to notice, so a serving process pays no wake-ups for it.
    uv_timer_start(
        &w.poll_, [](uv_timer_t* t) { of(t).check_done(); }, 10, 10);
  }

  // SIGUSR2: the successor first; only once it listens does this one drain.
  static void on_restart(uv_signal_t* s, int signum) {
    Waiter& w = of(s);
    if (w.draining_) {
      w.log(log::Level::warning,
            "signal " + std::to_string(signum) + " while draining: no successor started");
      return;
    }
    const RestartOptions& r = w.options_.restart;
    w.log(log::Level::info, "signal " + std::to_string(signum) + ", starting a successor");
    SuccessorOptions so;
    so.listeners = w.workers_.listen_fds();
    so.ready_timeout = r.ready_timeout;
    try {
      if (r.metrics_fd) so.metrics = r.metrics_fd();
    } catch (const std::exception& e) {
      w.log(log::Level::warning, std::string("restart: the metrics listener stays: ") + e.what());
    }
    const Successor next = start_successor(so);
    if (!next.ok()) {
      w.log(log::Level::error, "restart: the successor " + next.error + "; still serving");
      return;
    }
    w.log(log::Level::info, "restart: successor pid " + std::to_string(next.pid) +
                                " listens; draining (up to " +
                                format_duration(w.options_.drain_timeout) + ")");
    net::restart::set_replaced();
    net::restart::set_draining();
    w.draining_ = true;
    try {
      if (r.on_handover) r.on_handover();
    } catch (const std::exception& e) {  // never across the loop
      w.log(log::Level::error, e.what());
    }
    const auto spread = std::chrono::duration_cast<Duration>(w.options_.drain_timeout *
                                                             std::clamp(r.spread, 0.0, 1.0));
    w.workers_.drain(w.options_.drain_timeout, spread);
    uv_timer_start(
        &w.poll_, [](uv_timer_t* t) { of(t).check_done(); }, 10, 10);
  }

  static void on_tick(uv_timer_t* t) {
    Waiter& w = of(t);
    try {
      w.options_.tick();
    } catch (const std::exception& e) {  // never across the loop
      w.log(log::Level::error, e.what());
    }
    w.check_done();
  }

  Workers& workers_;
  const ServeOptions& options_;
  std::string program_;
  uv_loop_t loop_;
  uv_signal_t term_, intr_, usr2_;
  uv_timer_t tick_, poll_;
  int made_ = 0;  // handles initialised, in handles() order
  bool draining_ = false;
  bool closed_ = false;
};

}  // namespace

net::LoopSnapshot serve(Workers& workers, const ServeOptions& options) {
  // The waiting loop and its watchers exist before any worker accepts: with
  // a low descriptor limit, connections could otherwise take the
  // descriptors it needs.
  Waiter waiter(workers, options);
  // A restart's successor takes the listeners its predecessor handed over.
  if (options.restart.on_sigusr2 && !net::restart::inherited().listeners.empty())
    workers.adopt_listeners(net::restart::inherited().listeners);
  workers.start();
  try {
    if (options.on_listening)
      options.on_listening(workers);
    else
      announce("listening", workers.options().server.host, workers.port());
    // The predecessor (if any) may drain now; systemd learns our pid. Not
    // in a process that does not restart (a pre-forked child): it is not
    // the service's main process.
    if (options.restart.on_sigusr2) net::restart::announce_ready();
  } catch (...) {
    workers.stop();
    workers.join();
    throw;
  }
  waiter.run();
  workers.join();
  return workers.total();
}

net::LoopSnapshot serve(WorkersOptions options, Workers::HandlerFactory factory,
                        const ServeOptions& serve_options) {
  Workers workers(std::move(options), std::move(factory));
  return serve(workers, serve_options);
}

void announce(std::string_view what, std::string_view host, int port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  std::printf("%.*s on %s%.*s%s:%d\n", static_cast<int>(what.size()), what.data(), v6 ? "[" : "",
              static_cast<int>(host.size()), host.data(), v6 ? "]" : "", port);
  std::fflush(stdout);
}

}  // namespace heartwheel::runtime
