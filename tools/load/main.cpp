// heartwheel-load: holds many TCP connections against a server and measures
// round trips, heartbeats and how the server closed idle peers. See README.md.
// Exit status: 0 ok, 1 the run failed (nothing connected, a worker failed or
// did not report), 2 usage error, 3 --expect-idle-close not met.
#include <CLI/CLI.hpp>
#include <random>
#include <stdexcept>

#include "agent.h"
#include "cli_program.h"
#include "coordinator.h"
#include "options.h"
#include "supervisor.h"

int main(int argc, char** argv) {
  // One host's share of a run across hosts (agent.h): a command line of its own.
  if (heartwheel::load::is_agent_command(argc, argv))
    return heartwheel::load::run_agent(argc, argv);
  heartwheel::load::LoadOptions options;
  heartwheel::load::CoordinatorOptions across;
  CLI::App app{
      "heartwheel-load: open many TCP connections (over several processes and source addresses), "
      "hold them,\n"
      "send messages or heartbeats, let a fraction go silent, and report RTT percentiles and how "
      "the server\n"
      "closed idle connections. Exit status: 0 ok, 1 run failed (e.g. nothing connected), 2 usage "
      "error,\n"
      "3 --expect-idle-close not met. Example:\n"
      "  heartwheel-load --target 127.0.0.1:7000 -c 20000 -p 2 --source-ips 127.0.0.1-127.0.0.4 "
      "\\\n"
      "    --message-interval 1s --dead-fraction 0.1 --expect-idle-close 5s --duration 30s --json "
      "out.json\n"
      "Across hosts: this command line plus --agents HOST:PORT,... (or --agents-listen and "
      "--expect-agents)\n"
      "coordinates agents started with --agent-listen (or --coordinator); see "
      "`heartwheel-load --agent-listen X --help`.",
      "heartwheel-load"};
  heartwheel::load::add_options(app, options);
  heartwheel::load::add_coordinator_options(app, across);
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  try {
    if (across.active())
      heartwheel::load::validate_coordinator(options, across);
    else
      heartwheel::load::validate(options);
  } catch (const std::invalid_argument& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }
  if (across.active())
    return heartwheel::cli::run(app, [&] {
      return heartwheel::load::run_coordinator(options, across,
                                               std::vector<std::string>(argv, argv + argc));
    });
  // A fresh port offset each run, so a run right after another does not
  // reuse 4-tuples the server may still hold in TIME_WAIT.
  options.port_offset = std::random_device{}();
  return heartwheel::cli::run(app, [&] { return heartwheel::load::run_supervisor(options); });
}
