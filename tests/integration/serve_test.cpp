// runtime::serve in-process: the signals are raised on the serving thread itself
// (from on_listening or a tick, while serve's watchers exist), so each case
// is deterministic and no stray signal can reach a process without them.
// Clients are blocking sockets with a 5 s receive timeout.
#include <heartwheel/runtime/serve.h>

#include <csignal>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "net_test_support.h"

using namespace hwtest;
namespace runtime = heartwheel::runtime;
using net::CloseReason;

namespace {

struct Echo : net::Handler {
  void on_data(net::Connection& c, std::string_view d) override { c.write(d); }
};

// Ignores the drain: its connections stay until the drain timeout or a stop.
struct Stubborn : Echo {
  void on_drain(net::Connection&) override {}
};

bool default_disposition(int signum) {
  struct sigaction now {};
  ::sigaction(signum, nullptr, &now);
  return now.sa_handler == SIG_DFL;
}

runtime::WorkersOptions one_worker() {
  runtime::WorkersOptions o;
  o.wheel.tick = 5ms;
  o.publish_interval = 20ms;
  return o;
}

}  // namespace

TEST_CASE("serve drains the workers on SIGTERM and returns their final counters",
          "[net][serve]") {
  int fd = -1;
  bool echoed = false;
  int listening_calls = 0;
  std::vector<std::string> lines;
  runtime::Workers workers(one_worker(), [](unsigned) { return std::make_unique<Echo>(); });
  const auto total =
      runtime::serve(workers, {.program = "serve-test",
                               .drain_timeout = 5s,
                               .on_listening =
                                   [&](runtime::Workers& w) {
                                     ++listening_calls;
                                     fd = connect_blocking(w.port());
                                     echoed = echo_once(fd);
                                     std::raise(SIGTERM);  // handled once serve waits
                                   },
                               .log = [&](std::string_view l) { lines.emplace_back(l); }});
  CHECK(listening_calls == 1);
  CHECK(echoed);
  CHECK(wait_closed(fd));
  ::close(fd);
  CHECK_FALSE(workers.running());
  CHECK(total.net.accepted == 1);
  CHECK(total.net.closed(CloseReason::drain) == 1);
  CHECK(lines == std::vector<std::string>{"serve-test: signal 15, draining (up to 5s)"});
  CHECK(default_disposition(SIGTERM));
  CHECK(default_disposition(SIGINT));
}

TEST_CASE("A second signal stops the workers without waiting for the drain timeout",
          "[net][serve]") {
  int fd = -1;
  bool interrupted = false;
  std::vector<std::string> lines;
  const auto started = std::chrono::steady_clock::now();
  const auto total =
      runtime::serve(one_worker(), [](unsigned) { return std::make_unique<Stubborn>(); },
                     {.program = "serve-test",
                      .drain_timeout = 1min,  // the connection would stay this long
                      .tick_interval = 10ms,
                      .tick =
                          [&] {
                            // Once the drain began (its line came): the second signal.
                            if (!interrupted && lines.size() == 1) {
                              interrupted = true;
                              std::raise(SIGINT);
                            }
                          },
                      .on_listening =
                          [&](runtime::Workers& w) {
                            fd = connect_blocking(w.port());
                            CHECK(echo_once(fd));
                            std::raise(SIGTERM);
                          },
                      .log = [&](std::string_view l) { lines.emplace_back(l); }});
  // Bounded far below the drain timeout, loosely for a loaded machine.
  CHECK(std::chrono::steady_clock::now() - started < 30s);
  CHECK(wait_closed(fd));
  ::close(fd);
  CHECK(total.net.closed(CloseReason::local) == 1);
  CHECK(total.net.closed(CloseReason::drain) == 0);
  CHECK(lines == std::vector<std::string>{"serve-test: signal 15, draining (up to 1m)",
                                          "serve-test: second signal, closing everything now"});
}

TEST_CASE("A tick that throws is logged and serving goes on", "[net][serve]") {
  int ticks = 0;
  std::vector<std::string> lines;
  runtime::serve(one_worker(), [](unsigned) { return std::make_unique<Echo>(); },
                 {.program = "serve-test",
                  .drain_timeout = 1s,
                  .tick_interval = 5ms,
                  .tick =
                      [&] {
                        if (++ticks == 1) throw std::runtime_error("stats file unwritable");
                        if (ticks == 3) std::raise(SIGINT);
                      },
                  .on_listening = [](runtime::Workers&) {},
                  .log = [&](std::string_view l) { lines.emplace_back(l); }});
  CHECK(ticks >= 3);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "serve-test: error: stats file unwritable");
  CHECK(lines[1] == "serve-test: signal 2, draining (up to 1s)");
}

TEST_CASE("serve ends at the next tick when something else drained the workers",
          "[net][serve]") {
  runtime::Workers workers(one_worker(), [](unsigned) { return std::make_unique<Echo>(); });
  int ticks = 0;
  std::vector<std::string> lines;
  runtime::serve(workers, {.tick_interval = 5ms,
                           .tick =
                               [&] {
                                 if (++ticks == 2) workers.drain(1s);
                               },
                           .on_listening = [](runtime::Workers&) {},
                           .log = [&](std::string_view l) { lines.emplace_back(l); }});
  CHECK(ticks >= 2);
  CHECK_FALSE(workers.running());
  CHECK(lines.empty());  // no signal, nothing to say
}

TEST_CASE("When the workers cannot listen, serve throws and restores the signals",
          "[net][serve]") {
  runtime::Workers holder(one_worker(), [](unsigned) { return std::make_unique<Echo>(); });
  holder.start();  // one thread, no SO_REUSEPORT: holds the port exclusively
  runtime::WorkersOptions late = one_worker();
  late.server.port = holder.port();
  bool listening = false;
  CHECK_THROWS_AS(runtime::serve(late, [](unsigned) { return std::make_unique<Echo>(); },
                                 {.on_listening = [&](runtime::Workers&) { listening = true; }}),
                  std::system_error);
  CHECK_FALSE(listening);
  CHECK(default_disposition(SIGTERM));
  CHECK(default_disposition(SIGINT));
  holder.stop();
  holder.join();
}

TEST_CASE("An exception from on_listening stops the workers and leaves serve",
          "[net][serve]") {
  runtime::Workers workers(one_worker(), [](unsigned) { return std::make_unique<Echo>(); });
  CHECK_THROWS_WITH(runtime::serve(workers, {.on_listening =
                                                 [](runtime::Workers&) {
                                                   throw std::runtime_error("metrics port taken");
                                                 }}),
                    "metrics port taken");
  CHECK_FALSE(workers.running());
  CHECK(default_disposition(SIGTERM));
}
