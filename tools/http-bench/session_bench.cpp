// heartwheel-http-session-bench: the HTTP session's own cost per request,
// without sockets: parse (llhttp) + its deadlines set and cleared in a
// connection's deadline set (net::DeadlineTimer: one wheel entry, lazy refresh,
// as on a net::Connection) + handler + response serialisation, fed from
// memory into a null transport. Baseline in the same run: llhttp alone
// parsing the same bytes, so the ratio shows what the session adds on top of
// the parser.
//
//   heartwheel-http-session-bench [--requests N] [--pipeline K] [--json]
#include <heartwheel/http/session.h>
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/virtual_clock.h>
#include <llhttp.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_program.h"

namespace {

using namespace heartwheel;
using Wall = std::chrono::steady_clock;

// Counts the bytes; keeps the deadlines exactly as a connection would.
struct NullTransport final : http::Transport, private net::DeadlineTimer {
  explicit NullTransport(ManualTimerService& timers) : service(timers) {
    start_deadlines(policy);
  }
  ~NullTransport() override { stop_deadlines(); }
  TimerService& timer_service() const noexcept override { return service; }
  void send(std::string_view head, std::string_view body) override {
    sent += head.size() + body.size();
  }
  void close(CloseMode, net::CloseReason) override { closed = true; }
  void set_reading(bool) override {}
  TimerService& timers() noexcept override { return DeadlineTimer::timers(); }
  void set_deadline(net::Deadline slot, TimePoint when) override {
    DeadlineTimer::set_deadline(slot, when);
  }
  void begin_request(Duration timeout) override { DeadlineTimer::begin_request(timeout); }
  void end_request() override { DeadlineTimer::end_request(); }
  void on_deadline_event(net::DeadlineEvent, TimePoint) override {}

  ManualTimerService& service;
  net::IdlePolicy policy;  // lazy refresh, no idle slots: as heartwheel-http
  std::size_t sent = 0;
  bool closed = false;
};

const std::string kRequest =
    "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n";

double session_ns_per_request(std::size_t requests, std::size_t pipeline) {
  ManualTimerService timers;
  http::SessionOptions options;
  options.max_pipelined = pipeline + 1;
  http::SessionStats stats;
  http::Handler handler = [](const http::Request&, http::Responder r) {
    r.respond(200, "Hello from heartwheel\n");
  };
  NullTransport transport(timers);
  http::Session session(options, handler, transport, stats);
  session.start();
  std::string batch;
  for (std::size_t i = 0; i < pipeline; ++i) batch += kRequest;
  const auto start = Wall::now();
  for (std::size_t done = 0; done < requests; done += pipeline) {
    session.on_data(batch);
  }
  const auto ns = std::chrono::duration<double, std::nano>(Wall::now() - start).count();
  if (transport.closed || stats.responses[2] < requests)
    std::fprintf(stderr, "bench: lost requests\n");
  return ns / static_cast<double>(requests);
}

double llhttp_ns_per_request(std::size_t requests, std::size_t pipeline) {
  llhttp_settings_t settings;
  llhttp_settings_init(&settings);
  settings.on_message_complete = [](llhttp_t* p) {
    ++*static_cast<std::size_t*>(p->data);
    return 0;
  };
  llhttp_t parser;
  llhttp_init(&parser, HTTP_REQUEST, &settings);
  std::size_t messages = 0;
  parser.data = &messages;
  std::string batch;
  for (std::size_t i = 0; i < pipeline; ++i) batch += kRequest;
  const auto start = Wall::now();
  for (std::size_t done = 0; done < requests; done += pipeline)
    llhttp_execute(&parser, batch.data(), batch.size());
  const auto ns = std::chrono::duration<double, std::nano>(Wall::now() - start).count();
  if (messages < requests) std::fprintf(stderr, "bench: llhttp lost requests\n");
  return ns / static_cast<double>(requests);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t requests = 1'000'000;
  std::size_t pipeline = 1;
  bool json = false;
  CLI::App app{
      "heartwheel-http-session-bench: ns per request inside http::Session (no sockets), "
      "against llhttp alone on the same bytes.\nExit status: 0 ok, 1 runtime failure, 2 usage "
      "error.",
      "heartwheel-http-session-bench"};
  app.add_option("--requests", requests, "requests per measurement (>= 10)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{10}, std::size_t{1} << 40));
  app.add_option("--pipeline", pipeline, "requests per on_data() call")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--json", json, "print one JSON line");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  return heartwheel::cli::run(app, [&] {
    requests = (requests + pipeline - 1) / pipeline * pipeline;

    session_ns_per_request(requests / 10, pipeline);  // warm-up
    const double session_ns = session_ns_per_request(requests, pipeline);
    const double parser_ns = llhttp_ns_per_request(requests, pipeline);
    if (json) {
      nlohmann::json j = {{"bench", "http_session"},
                          {"requests", requests},
                          {"pipeline", pipeline},
                          {"session_ns_per_request", session_ns},
                          {"llhttp_ns_per_request", parser_ns},
                          {"session_requests_per_sec", 1e9 / session_ns},
                          {"ratio_session_to_llhttp", session_ns / parser_ns}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("session: %.0f ns/request (%.0f req/s on one core)\n", session_ns,
                  1e9 / session_ns);
      std::printf("llhttp alone: %.0f ns/request; session / llhttp = %.2f\n", parser_ns,
                  session_ns / parser_ns);
    }
    return 0;
  });
}
