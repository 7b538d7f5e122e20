// See serve_loop.h.
#include "serve_loop.h"

#include <heartwheel/common/duration_parse.h>
#include <heartwheel/common/error.h>
#include <uv.h>

#include <csignal>
#include <cstdio>
#include <exception>

namespace heartwheel::cli {

namespace {

struct Control {
  uv_loop_t loop;
  uv_signal_t sigterm, sigint;
  uv_timer_t tick, poll;
  net::Workers* workers = nullptr;
  const ServeLoopOptions* options = nullptr;
  bool draining = false;
};

Control& of(uv_handle_t* h) { return *static_cast<Control*>(h->data); }

void on_poll(uv_timer_t* t) {
  Control& c = of(reinterpret_cast<uv_handle_t*>(t));
  if (c.workers->running()) return;
  for (uv_handle_t* h :
       {reinterpret_cast<uv_handle_t*>(&c.sigterm), reinterpret_cast<uv_handle_t*>(&c.sigint),
        reinterpret_cast<uv_handle_t*>(&c.tick), reinterpret_cast<uv_handle_t*>(&c.poll)})
    uv_close(h, nullptr);
}

void on_signal(uv_signal_t* s, int signum) {
  Control& c = of(reinterpret_cast<uv_handle_t*>(s));
  const char* name = c.options->program.c_str();
  if (c.draining) {
    std::fprintf(stderr, "%s: second signal, closing everything now\n", name);
    c.workers->stop();
    return;
  }
  c.draining = true;
  std::fprintf(stderr, "%s: signal %d, draining (up to %s)\n", name, signum,
               format_duration(c.options->drain_timeout).c_str());
  c.workers->drain(c.options->drain_timeout);
  // Worker loops end only after a drain or stop: only now is there anything to notice.
  uv_timer_start(&c.poll, on_poll, 10, 10);
}

void on_tick(uv_timer_t* t) {
  Control& c = of(reinterpret_cast<uv_handle_t*>(t));
  try {
    c.options->tick();
  } catch (const std::exception& e) {  // never across the loop
    std::fprintf(stderr, "%s: error: %s\n", c.options->program.c_str(), e.what());
  }
}

}  // namespace

void serve_until_signalled(net::Workers& workers, const ServeLoopOptions& options) {
  Control c;
  c.workers = &workers;
  c.options = &options;
  check_uv(uv_loop_init(&c.loop), "uv_loop_init");
  check_uv(uv_signal_init(&c.loop, &c.sigterm), "uv_signal_init");
  check_uv(uv_signal_init(&c.loop, &c.sigint), "uv_signal_init");
  check_uv(uv_timer_init(&c.loop, &c.tick), "uv_timer_init");
  check_uv(uv_timer_init(&c.loop, &c.poll), "uv_timer_init");
  c.sigterm.data = c.sigint.data = c.tick.data = c.poll.data = &c;
  check_uv(uv_signal_start(&c.sigterm, on_signal, SIGTERM), "uv_signal_start");
  check_uv(uv_signal_start(&c.sigint, on_signal, SIGINT), "uv_signal_start");
  const auto every = to_uv_millis_ceil(options.tick_interval);
  if (options.tick && every > 0) uv_timer_start(&c.tick, on_tick, every, every);
  uv_run(&c.loop, UV_RUN_DEFAULT);
  uv_loop_close(&c.loop);
}

void announce(std::string_view what, std::string_view host, int port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  std::printf("%.*s on %s%.*s%s:%d\n", static_cast<int>(what.size()), what.data(), v6 ? "[" : "",
              static_cast<int>(host.size()), host.data(), v6 ? "]" : "", port);
  std::fflush(stdout);
}

void announce_listening(std::string_view host, int port, std::string_view metrics_address) {
  announce("listening", host, port);
  if (metrics_address.empty()) return;
  std::printf("metrics on %.*s\n", static_cast<int>(metrics_address.size()),
              metrics_address.data());
  std::fflush(stdout);
}

}  // namespace heartwheel::cli
