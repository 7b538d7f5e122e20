// heartwheel-load: holds many TCP connections against a server and measures
// round trips, heartbeats and how the server closes idle peers. See README.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "options.h"
#include "supervisor.h"

int main(int argc, char** argv) {
  heartwheel::load::LoadOptions options;
  CLI::App app{
      "heartwheel-load: open many TCP connections (over several processes and source addresses), "
      "hold them,\n"
      "send messages or heartbeats, let a fraction go silent, and report RTT percentiles and how "
      "the server\n"
      "closed idle connections. Example:\n"
      "  heartwheel-load --target 127.0.0.1:7000 -c 20000 -p 2 --source-ips 127.0.0.1-127.0.0.4 "
      "\\\n"
      "    --message-interval 1s --dead-fraction 0.1 --expect-idle-close 5s --duration 30s --json "
      "out.json"};
  heartwheel::load::add_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    heartwheel::load::validate(options);
    // A fresh port offset each run, so a run right after another does not
    // reuse 4-tuples the server may still hold in TIME_WAIT.
    options.port_offset = std::random_device{}();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "heartwheel-load: %s\n", e.what());
    return 2;
  }
  return heartwheel::load::run_supervisor(options);
}
